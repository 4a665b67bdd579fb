#include "projections/pg_copy.hpp"

#include <pqxx/pqxx>
#include <pqxx/tablewriter>

namespace sandboxd::projections {

void copy_field(std::string& out, std::string_view v) {
  if (v.find_first_of("\\\t\n\r") == std::string_view::npos) {
    out.append(v);
    out += '\t';
    return;
  }
  for (char c : v) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      out += c;
    }
  }
  out += '\t';
}

void copy_field(std::string& out, std::int64_t v) {
  out += std::to_string(v);
  out += '\t';
}

// COPY's text format takes bytea's hex input form, \x and the digits, with its backslash
// escaped.
void copy_hex_bytea(std::string& out, std::string_view hex) {
  out += "\\\\x";
  out.append(hex);
  out += '\t';
}

void copy_end_row(std::string& out) {
  out.back() = '\n';
}

// pqxx 6.4's stream_to only takes tuples, which it escapes field by field; the rows here are
// escaped already (copy_field), so they go through tablewriter's raw line (deprecated in 6.4 in
// favour of stream_to, and only because of its own escaping, which is not used here).
void copy_rows(pqxx::transaction_base& tx, const std::string& table,
               const std::vector<std::string>& columns, std::string rows) {
  if (rows.empty())
    return;
  rows.pop_back(); // write_raw_line adds the last newline
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  pqxx::tablewriter copy(tx, table, columns.begin(), columns.end());
#pragma GCC diagnostic pop
  copy.write_raw_line(rows);
  copy.complete();
}

} // namespace sandboxd::projections
