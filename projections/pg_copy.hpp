// pg_copy — rows in COPY's text format, sent to a table in one piece.
//
// A row is its fields, each appended by copy_field (tab-separated, with COPY's backslash
// escapes) or copy_hex_bytea, then copy_end_row. copy_rows sends any number of such rows
// through one COPY: for the append-only tables (billing_intervals, audit_log), one statement
// per batch whatever its size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pqxx {
class transaction_base;
}

namespace sandboxd::projections {

void copy_field(std::string& out, std::string_view v);
void copy_field(std::string& out, std::int64_t v);
// A bytea field given as hex digits.
void copy_hex_bytea(std::string& out, std::string_view hex);
// Ends a row: its last field's tab becomes the newline.
void copy_end_row(std::string& out);

// Sends `rows` (each ending in a newline) to `table`'s `columns`; nothing when empty.
void copy_rows(pqxx::transaction_base& tx, const std::string& table,
               const std::vector<std::string>& columns, std::string rows);

} // namespace sandboxd::projections
