#include "cli/audit_view.hpp"

#include "cli/table.hpp"
#include "cli/terminal_text.hpp"
#include "cli/time_arg.hpp"

namespace sandboxd::cli {

json audit_row_json(const api::audit_entry& e) {
  json j;
  j["tenant"] = e.tenant;
  j["partition"] = e.partition;
  j["position"] = e.position;
  j["event_id"] = e.event_id;
  j["sandbox_id"] = e.sandbox_id;
  j["time"] = format_time(time_point{std::chrono::nanoseconds{e.occurred_at_ns}});
  j["principal"] = e.principal;
  j["action"] = e.action;
  j["outcome"] = e.outcome;
  j["detail"] = e.detail;
  j["redacted"] = e.redacted;
  j["hash"] = hex(e.hash);
  return j;
}

std::string audit_table(const std::vector<api::audit_entry>& rows) {
  std::vector<row> cells;
  for (const auto& e : rows)
    cells.push_back({format_time_millis(time_point{std::chrono::nanoseconds{e.occurred_at_ns}}),
                     e.sandbox_id, e.principal, e.action, e.outcome,
                     std::to_string(e.partition) + "/" + std::to_string(e.position),
                     e.redacted ? std::string("(redacted)") : e.detail});
  return render_table({"TIME", "SANDBOX", "PRINCIPAL", "ACTION", "OUTCOME", "CHAIN", "DETAIL"},
                      cells);
}

json audit_check_json(const api::audit_check& c) {
  json problems = json::array();
  for (const auto& p : c.problems)
    problems.push_back(json{{"tenant", p.tenant},
                            {"partition", p.partition},
                            {"position", p.position},
                            {"event_id", p.event_id},
                            {"kind", p.kind},
                            {"message", p.message}});
  return json{{"ok", c.problems.empty()},
              {"checked_rows", c.checked_rows},
              {"problems", std::move(problems)}};
}

std::string problem_text(const api::audit_problem& p) {
  return terminal_text(
    "tenant " + p.tenant + ", partition " + std::to_string(p.partition) + ", position " +
    std::to_string(p.position) +
    (p.event_id.empty() ? std::string(" (no row)") : " (event " + p.event_id + ")") + ": " +
    p.kind + ": " + p.message);
}

std::string audit_check_text(const api::audit_check& c) {
  if (c.problems.empty())
    return "the audit chain holds: " + std::to_string(c.checked_rows) + " rows checked\n";
  std::string out =
    "the audit chain is broken: first bad row: " + problem_text(c.problems[0]) + "\n";
  if (c.problems.size() > 1)
    out += std::to_string(c.problems.size() - 1) + " more problem" +
           (c.problems.size() > 2 ? "s" : "") + " (--json lists them all)\n";
  return out;
}

} // namespace sandboxd::cli
