#include "projections/pg_array.hpp"

namespace sandboxd::projections {

void pg_array::separator() {
  if (size_++ > 0)
    text_ += ',';
}

pg_array& pg_array::add(std::string_view v) {
  separator();
  text_ += '"';
  for (char c : v) {
    if (c == '"' || c == '\\')
      text_ += '\\';
    text_ += c;
  }
  text_ += '"';
  return *this;
}

pg_array& pg_array::add(std::int64_t v) {
  separator();
  text_ += std::to_string(v);
  return *this;
}

pg_array& pg_array::add_null() {
  separator();
  text_ += "NULL";
  return *this;
}

} // namespace sandboxd::projections
