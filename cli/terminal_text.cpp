#include "cli/terminal_text.hpp"

#include "base/utf8.hpp"

namespace sandboxd::cli {
namespace {

// The length of the sequence that `lead` starts when it is well-formed: 1 for ASCII, 2 to 4
// for a UTF-8 lead byte, 0 for a byte no sequence starts with (is_utf8 checks the rest).
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    return 2;
  if (lead >= 0xE0 && lead <= 0xEF)
    return 3;
  if (lead >= 0xF0 && lead <= 0xF4)
    return 4;
  return 0;
}

void put_hex(std::string& out, unsigned char c) {
  static constexpr char digits[] = "0123456789abcdef";
  out += "\\x";
  out += digits[c >> 4];
  out += digits[c & 15];
}

void escape_into(std::string& out, std::string_view text, bool quoted) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      put_hex(out, c);
      ++i;
      continue;
    }
    if (c == '\\' || (quoted && c == '"')) {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const std::size_t n = sequence_length(c);
    if (n == 0 || i + n > text.size() || !is_utf8(text.substr(i, n))) {
      put_hex(out, c); // not UTF-8: a lone byte, raw C1 (0x80-0x9f) among them
      ++i;
      continue;
    }
    if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) { // U+0080..U+009F
      put_hex(out, c);
      put_hex(out, static_cast<unsigned char>(text[i + 1]));
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
}

} // namespace

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  escape_into(out, text, false);
  return out;
}

std::string quoted_terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  escape_into(out, text, true);
  out += '"';
  return out;
}

} // namespace sandboxd::cli
