#include "base/utf8.hpp"

#include <cstdint>

namespace sandboxd {

namespace {

// The length of the well-formed sequence at `i`, or 0 when the byte there starts none.
std::size_t sequence_at(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2))
      return 0;
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F)) // overlong; surrogate
      return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3))
      return 0;
    if ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F)) // overlong; > U+10FFFF
      return 0;
    return 4;
  }
  return 0; // a continuation byte, C0, C1, F5..FF
}

} // namespace

bool is_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto n = sequence_at(s, i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

bool is_text(std::string_view s) {
  return s.find('\0') == std::string_view::npos && is_utf8(s);
}

std::string text_of(std::string_view s) {
  if (is_text(s))
    return std::string(s);
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const auto n = sequence_at(s, i);
    if (n == 0 || s[i] == '\0') {
      out += replacement;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

} // namespace sandboxd
