#include "projections/pg_array.hpp"

namespace sandboxd::projections {

void pg_array::separator() {
  if (size_++ > 0)
    text_ += ',';
}

pg_array& pg_array::add(std::string_view v) {
  separator();
  text_ += '"';
  // Runs without a quote or backslash are appended whole.
  for (auto at = v.find_first_of("\"\\"); at != std::string_view::npos;
       at = v.find_first_of("\"\\")) {
    text_.append(v.substr(0, at));
    text_ += '\\';
    text_ += v[at];
    v.remove_prefix(at + 1);
  }
  text_.append(v);
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
