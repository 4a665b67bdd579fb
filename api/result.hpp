// result.hpp — the RPC layer's error code, `error` and `result<T>`: what the server answers
// and what the C++ client returns for a call whose "no" is normal.
//
// The values and names are those of the project's one error code (docs/errors.md): the
// numbers 1-6 are events::errc's, 7-10 the runtime's extra outcomes. The runtime's and the
// events' codes are converted here, once, by name; `failed` of the runtime is `internal`.
#pragma once

#include "events/errc.hpp"
#include "runtime/errc.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sandboxd::api {

enum class errc : std::uint16_t {
  not_found = 1,          // the sandbox (exec, file) does not exist, or is another tenant's
  conflict = 2,           // the command does not fit the sandbox's state
  permission_denied = 3,  // the token may not do this (unknown token, admin scope)
  invalid_argument = 4,   // the request is malformed; retrying it unchanged fails again
  resource_exhausted = 5, // a quota or limit (tenant quota, calls in flight, connections)
  unavailable = 6,        // a dependency is down, the outcome is unknown, or not served
  not_a_directory = 7,    // a path component or a directory call's target is not a directory
  is_a_directory = 8,     // a file call named a directory
  too_large = 9,          // a file or message is bigger than its limit
  internal = 10,          // the runtime or the host failed a step; the message has its output
};

// "not_found", ...; "errc(<n>)" for a value this version does not know.
std::string to_string(errc code);
// The code named `name`; empty for a name no code has.
std::optional<errc> parse_errc(std::string_view name);

errc from_events(events::errc code);
errc from_runtime(runtime::errc code);

struct error {
  errc code;
  std::string message;
  bool operator==(const error&) const = default;
};

inline error make_error(errc code, std::string message) {
  return error{code, std::move(message)};
}
inline error from_events(const events::error& e) {
  return error{from_events(e.code), e.message};
}

// Either a T or an error; result<void> carries only the error, if any.
template <class T>
class result {
public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  result(error e) : v_(std::in_place_index<1>, std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  const error& err() const { return std::get<1>(v_); }
  errc code() const { return std::get<1>(v_).code; }

private:
  std::variant<T, error> v_;
};

template <>
class result<void> {
public:
  result() = default;
  result(error e) : e_(std::move(e)) {}

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const error& err() const { return *e_; }
  errc code() const { return e_->code; }

private:
  std::optional<error> e_;
};

} // namespace sandboxd::api
