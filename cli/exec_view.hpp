// exec_view — an exec as sandboxctl shows it.
//
// The result document (`exec --json`, `wait --json`): exec_id, exit_code (what sandboxctl
// exits with: the command's own code, 128 + N for signal N), signal (0: none), timed_out,
// oom_killed, output_truncated, interrupted, duration_seconds, stdout_bytes, stderr_bytes;
// `exec --json` adds the output as stdout and stderr (or stdout_base64 / stderr_base64 when
// it is not UTF-8). An exec in flight (`ps`, `exec --background`): exec_id, argv,
// started_at.
#pragma once

#include "api/records.hpp"
#include "cli/json_util.hpp"

#include <string>
#include <vector>

namespace sandboxd::cli {

json exec_result_json(const api::exec_result& r);
json exec_info_json(const api::exec_info& e);
std::string exec_table(const std::vector<api::exec_info>& execs);

// Why a command that did not simply exit ended, for stderr ("timed out after 1s; its
// processes were killed (SIGKILL)"); empty when it exited on its own.
std::string exec_ending_note(const api::exec_result& r, std::chrono::nanoseconds timeout);

// argv joined for people: words with blanks or quotes single-quoted, a single quote inside as
// '"'"' (no backslash, which a table shows doubled); control bytes are left to the table.
std::string argv_text(const std::vector<std::string>& argv);

} // namespace sandboxd::cli
