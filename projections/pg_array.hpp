// pg_array — PostgreSQL array literals for `unnest($1::text[], …)` statements.
//
// libpqxx 6.4 cannot pass a std::vector as an array parameter, so batches are sent as the
// text form of an array: every element double-quoted with `"` and `\` escaped, NULL for a
// missing value. Cast the parameter to the element type in SQL (`$2::bigint[]`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandboxd::projections {

class pg_array {
public:
  pg_array& add(std::string_view v);
  pg_array& add(std::int64_t v);
  pg_array& add(std::uint64_t v) { return add(static_cast<std::int64_t>(v)); }
  pg_array& add(std::int32_t v) { return add(static_cast<std::int64_t>(v)); }
  pg_array& add(bool v) { return add(std::string_view(v ? "t" : "f")); }
  pg_array& add_null();
  template <typename T>
  pg_array& add(const std::optional<T>& v) {
    return v ? add(*v) : add_null();
  }
  pg_array& add(const std::string& v) { return add(std::string_view(v)); }
  pg_array& add(const char* v) { return add(std::string_view(v)); }

  // The literal, "{...}".
  std::string str() const { return text_ + "}"; }
  std::size_t size() const { return size_; }

private:
  void separator();
  std::string text_ = "{";
  std::size_t size_ = 0;
};

} // namespace sandboxd::projections
