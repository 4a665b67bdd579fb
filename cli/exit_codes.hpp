// exit_codes — what sandboxctl's exit status means (docs/errors.md, docs/cli.md).
//
//   0          success
//   1          a check answered "no" (audit verify found a bad row)
//   200        usage error: bad flags or arguments
//   200 + N    the daemon (or the connection) answered errc value N: 201 not_found …
//              210 internal
//   exec/wait  the command's own exit code (0–255), 128 + N when signal N ended it
//
// 200–210 are outside what shells and common tools exit with (0–2, 126, 127, 128–165,
// 255), so a script can tell a sandboxctl error from a command's own code.
#pragma once

#include "api/records.hpp"
#include "base/errc.hpp"

#include <string>
#include <vector>

namespace sandboxd::cli {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_check_failed = 1;
inline constexpr int k_exit_usage = 200;

// 200 + the code's value.
int exit_code_of(errc code);

// The exit status `sandboxctl exec` and `wait` end with: the command's exit code, or
// 128 + the signal that ended it.
int exit_code_of(const api::exec_result& r);

struct exit_code_row {
  int code;
  std::string name;    // "usage", "not_found", ...
  std::string meaning; // one line
};

// Every exit code sandboxctl itself produces, in order (for docs/cli.md and --help).
const std::vector<exit_code_row>& exit_code_table();

} // namespace sandboxd::cli
