#include "cli/json_util.hpp"

#include "base/utf8.hpp"

#include <cstdint>

namespace sandboxd::cli {

json seconds_json(std::chrono::nanoseconds d) {
  const auto n = d.count();
  if (n % 1'000'000'000 == 0)
    return n / 1'000'000'000;
  return static_cast<double>(n) / 1e9;
}

std::string hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string base64(std::string_view bytes) {
  static constexpr char table[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
                            (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) |
                            std::uint8_t(bytes[i + 2]);
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += table[(v >> 6) & 63];
    out += table[v & 63];
  }
  if (i < bytes.size()) {
    std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      v |= std::uint32_t(std::uint8_t(bytes[i + 1])) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  return is_utf8(s);
}

void put_bytes(json& doc, const std::string& key, std::string_view bytes) {
  if (valid_utf8(bytes))
    doc[key] = std::string(bytes);
  else
    doc[key + "_base64"] = base64(bytes);
}

std::string dump_line(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace sandboxd::cli
