// errc — the outcomes of a runtime call that are not faults, and `outcome<T>`, the
// value every driver call returns: either a T or an `error` (a code and a message that
// names the thing and says what to do). Exceptions are reserved for faults of the
// host itself and are caught at the driver boundary and reported as `errc::failed`.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace sandboxd::runtime {

enum class errc {
  not_found,          // no such sandbox, template, file or directory
  conflict,           // the call does not fit the sandbox's state (exec while paused)
  invalid_argument,   // a bad id, path (NUL), argv, limit or policy
  not_a_directory,    // a path component or the target is not a directory
  is_a_directory,     // a file operation named a directory
  too_large,          // a file is bigger than the sandbox's file size limit
  permission_denied,  // the path leaves the sandbox's root or is otherwise refused
  resource_exhausted, // the host or a limit ran out (disk, pids, memory)
  unavailable,        // the driver cannot run on this machine (runtime missing)
  failed,             // the runtime failed the step; the message holds its output
};

// The name of a code, e.g. "not_found".
const char* to_string(errc code);

struct error {
  errc code;
  std::string message;
};

// Either a value or an error. `outcome<void>` carries only the error, if any.
template <class T>
class outcome {
public:
  outcome(T value) : v_(std::move(value)) {}
  outcome(error e) : v_(std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const error& err() const { return std::get<1>(v_); }
  errc code() const { return std::get<1>(v_).code; }

private:
  std::variant<T, error> v_;
};

template <>
class outcome<void> {
public:
  outcome() = default;
  outcome(error e) : e_(std::move(e)) {}

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const error& err() const { return *e_; }
  errc code() const { return e_->code; }

private:
  std::optional<error> e_;
};

inline error make_error(errc code, std::string message) {
  return error{code, std::move(message)};
}

// Runs `f` (returning an outcome) and turns an exception, a fault of the host, into
// errc::failed naming `what`: the driver boundary never throws.
template <class F>
auto guard_faults(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_error(errc::failed, what + ": " + e.what());
  }
}

} // namespace sandboxd::runtime
