#include "cli/exit_codes.hpp"

namespace sandboxd::cli {

int exit_code_of(errc code) {
  return k_exit_usage + static_cast<int>(code);
}

int exit_code_of(const api::exec_result& r) {
  if (r.signal > 0)
    return 128 + r.signal;
  return r.exit_code & 0xff;
}

const std::vector<exit_code_row>& exit_code_table() {
  static const std::vector<exit_code_row> rows = [] {
    std::vector<exit_code_row> v{
      {k_exit_ok, "ok", "the command did what it was asked"},
      {k_exit_check_failed, "check failed",
       "`audit verify` found a row that does not fit its chain (the first is named)"},
      {k_exit_usage, "usage", "bad flags or arguments; nothing was sent to sandboxd"},
    };
    const std::pair<errc, const char*> codes[] = {
      {errc::not_found, "the sandbox (exec, file) does not exist, or is another tenant's"},
      {errc::conflict, "the command does not fit the sandbox's state (exec on a paused one)"},
      {errc::permission_denied, "the token may not do this (unknown token, no admin scope)"},
      {errc::invalid_argument, "the request is malformed; retrying it unchanged fails again"},
      {errc::resource_exhausted, "a quota or limit (tenant quota, disk, calls in flight)"},
      {errc::unavailable,
       "sandboxd cannot be reached, a dependency is down, or the outcome is unknown; retry"},
      {errc::not_a_directory, "a path component or a directory call's target is not one"},
      {errc::is_a_directory, "a file call named a directory"},
      {errc::too_large, "a file or message is bigger than its limit"},
      {errc::internal, "the runtime or host failed a step; the message holds its output"},
    };
    for (const auto& [c, meaning] : codes)
      v.push_back({exit_code_of(c), to_string(c), meaning});
    return v;
  }();
  return rows;
}

} // namespace sandboxd::cli
