// table — text output for people: columns padded to their widest cell (the last column is
// not padded, so lines carry no trailing blanks), and byte sizes in binary units. Every cell,
// label and value is shown as terminal_text (cli/terminal_text.hpp): a control byte in a
// tenant's string is escaped here, so callers pass the strings as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::cli {

using row = std::vector<std::string>;

// Header then rows, columns separated by two spaces, each line ending in '\n'. A row with
// fewer cells than the header leaves the rest empty.
std::string render_table(const row& header, const std::vector<row>& rows);

// "label:  value" lines, the values aligned; an empty label continues the field above on a
// line of its own (a value never holds a newline: it would be shown as \x0a).
std::string render_fields(const std::vector<std::pair<std::string, std::string>>& fields);

// "512 B", "1.5 KiB", "20.0 GiB".
std::string human_bytes(std::uint64_t bytes);

} // namespace sandboxd::cli
