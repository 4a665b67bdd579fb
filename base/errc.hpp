// errc.hpp — the project's one error code, and `error`, the value a domain "no" travels in.
//
// Every layer returns these for outcomes that are normal in the domain (a command that does
// not fit the sandbox's state, a missing sandbox or file, a bad argument); exceptions are for
// faults only. The RPC layer maps `errc` once to RPC errors, the CLI once to exit codes, the
// Python SDK once to exception classes (docs/errors.md has the table).
//
// The numeric values are persisted (the `commandRejected` event's ErrorCode in
// schemas/events.capnp uses the same numbers) and never change; new codes are appended.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace sandboxd {

enum class errc : std::uint16_t {
  not_found = 1,          // the sandbox (or exec, file, template) does not exist
  conflict = 2,           // the command does not fit the current state (HTTP 409)
  permission_denied = 3,  // the caller may not do this
  invalid_argument = 4,   // the command itself is malformed; retrying it unchanged fails again
  resource_exhausted = 5, // a quota or capacity limit; retry later or with smaller limits
  unavailable = 6,        // a dependency is down, or an outcome is unknown; retrying may succeed
  not_a_directory = 7,    // a path component or the target of a directory call is not one
  is_a_directory = 8,     // a file call named a directory
  too_large = 9,          // a file or message is bigger than its limit
  internal = 10,          // the runtime or the host failed a step; the message holds its output
};

// "not_found", "conflict", ...; "errc(<n>)" for a value this version does not know.
std::string to_string(errc code);

// Writes to_string(code).
std::ostream& operator<<(std::ostream& out, errc code);

// The code named `name` ("not_found", ...); false when no code has that name.
bool parse_errc(std::string_view name, errc& out);

// A domain error: the code, and a message that names the thing and says what to do
// ("sandbox sb_12 is paused; resume it before exec").
struct error {
  errc code;
  std::string message;

  bool operator==(const error&) const = default;
};

inline error make_error(errc code, std::string message) {
  return error{code, std::move(message)};
}

} // namespace sandboxd
