#include "cli/exec_view.hpp"

#include "cli/duration_arg.hpp"
#include "cli/exit_codes.hpp"
#include "cli/table.hpp"
#include "cli/time_arg.hpp"
#include "cli/value_args.hpp"

namespace sandboxd::cli {

json exec_result_json(const api::exec_result& r) {
  json j;
  j["exec_id"] = r.exec_id;
  j["exit_code"] = exit_code_of(r);
  j["signal"] = r.signal;
  j["timed_out"] = r.timed_out;
  j["oom_killed"] = r.oom_killed;
  j["output_truncated"] = r.output_truncated;
  j["interrupted"] = r.interrupted;
  j["duration_seconds"] = seconds_json(std::chrono::nanoseconds{r.duration_ns});
  j["stdout_bytes"] = r.stdout_bytes;
  j["stderr_bytes"] = r.stderr_bytes;
  return j;
}

json exec_info_json(const api::exec_info& e) {
  return json{{"exec_id", e.exec_id},
              {"argv", e.argv},
              {"started_at", format_time(time_point{std::chrono::nanoseconds{e.started_at_ns}})}};
}

std::string argv_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty())
      out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a)
      out += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string exec_table(const std::vector<api::exec_info>& execs) {
  std::vector<row> rows;
  for (const auto& e : execs)
    rows.push_back({e.exec_id,
                    format_time_seconds(time_point{std::chrono::nanoseconds{e.started_at_ns}}),
                    argv_text(e.argv)});
  return render_table({"EXEC", "STARTED", "COMMAND"}, rows);
}

std::string exec_ending_note(const api::exec_result& r, std::chrono::nanoseconds timeout) {
  std::string how = r.signal > 0 ? " (" + signal_name(r.signal) + ")" : "";
  if (r.timed_out)
    return "timed out after " +
           (timeout.count() > 0 ? format_duration(timeout)
                                : format_duration(std::chrono::nanoseconds{r.duration_ns})) +
           "; its processes were killed" + how;
  if (r.oom_killed)
    return "ran out of memory and was killed" + how + "; create the sandbox with more --memory";
  std::string note;
  if (r.output_truncated)
    note = "its output was cut at the node's cap (" + std::to_string(r.stdout_bytes) +
           " bytes of stdout, " + std::to_string(r.stderr_bytes) + " of stderr kept)";
  return note;
}

} // namespace sandboxd::cli
