// terminal_text — a string a tenant chose (a label, a file name, an argv, a template name, an
// error message naming one), made safe to print on an operator's terminal.
//
// sandboxctl's human output never writes a control byte it did not put there itself: each
// C0 control (0x00-0x1f, so also newline, CR and tab), DEL (0x7f), each C1 control (U+0080
// to U+009F, encoded as 0xc2 0x80-0x9f) and each byte that is not part of well-formed UTF-8
// (a lone 0x80-0xff, so raw C1 bytes too) is shown as `\xHH`, two lowercase hex digits per
// byte; a backslash is shown as `\\`, so an escape can always be told from text that looks
// like one. Everything else, printable ASCII and well-formed UTF-8 ("café", "日本"), is
// kept byte for byte. An ESC or OSC sequence therefore cannot retitle or clear the terminal,
// and a newline cannot start a row of its own. --json output is not made with these: JSON's
// own escaping keeps the exact bytes.
#pragma once

#include <string>
#include <string_view>

namespace sandboxd::cli {

// The text with every byte above escaped; unchanged when it has none.
std::string terminal_text(std::string_view text);

// The same inside double quotes, a double quote escaped as `\"` (event lines quote a value
// that holds blanks, quotes or `=`).
std::string quoted_terminal_text(std::string_view text);

} // namespace sandboxd::cli
