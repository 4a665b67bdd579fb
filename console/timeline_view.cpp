#include "console/timeline_view.hpp"

#include "cli/event_view.hpp"
#include "cli/replay_view.hpp"
#include "cli/time_arg.hpp"
#include "projections/audit_chain.hpp"
#include "replay/state_fields.hpp"

namespace sandboxd::console {
namespace {

using cli::json;

double ms_of(std::int64_t ns) {
  return static_cast<double>(ns / 1000) / 1000.0; // whole microseconds, exact in a double
}
double ms_of(events::time_point t) {
  return ms_of(t.time_since_epoch().count());
}

// The audit action of an event: its type, or the command a rejection refused.
std::string action_of(const events::payload& p) {
  if (const auto* r = std::get_if<events::command_rejected>(&p))
    return events::to_string(r->command);
  return std::string(events::type_name(p));
}

json payload_view(const events::payload& p, bool redacted) {
  if (!redacted)
    return cli::payload_json(p);
  if (projections::has_private_detail(action_of(p)))
    return json{{"redacted", true}};
  json j = cli::payload_json(p);
  if (std::holds_alternative<events::created>(p)) {
    j.erase("labels");
    j.erase("env");
  }
  return j;
}

json state_view(const actors::sandbox_state& s, bool redacted) {
  json j = cli::state_json(s);
  if (redacted)
    for (auto it = j.begin(); it != j.end();)
      it = it.key().rfind("label.", 0) == 0 ? j.erase(it) : std::next(it);
  return j;
}

json event_view(const replay::replay_step& s, bool redacted) {
  json j = cli::event_json({s.event, s.partition, s.offset});
  j["payload"] = payload_view(s.event.body, redacted);
  return j;
}

} // namespace

bool history_redacted(const std::vector<replay::replay_step>& steps) {
  for (const auto& s : steps)
    if (std::holds_alternative<events::redacted>(s.event.body))
      return true;
  return false;
}

json timeline_json(const std::vector<replay::replay_step>& steps, const timeline& t) {
  const bool redacted = history_redacted(steps);
  json doc;
  const auto& last = steps.back();
  doc["sandbox"] = {{"id", last.event.sandbox_id},
                    {"tenant", last.state.tenant},
                    {"state", state_view(last.state, redacted)}};
  doc["redacted"] = redacted;
  doc["first_ms"] = ms_of(steps.front().event.occurred_at);
  doc["last_ms"] = ms_of(last.event.occurred_at);
  json evs = json::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    json e;
    e["seq"] = s.event.sequence;
    e["t_ms"] = ms_of(s.event.occurred_at);
    e["time"] = cli::format_time(s.event.occurred_at);
    e["kind"] = std::string(events::type_name(s.event.body));
    e["lane"] = t.lanes[i];
    e["principal"] = s.event.principal;
    e["status"] = std::string(actors::to_string(s.state.status));
    e["payload"] = payload_view(s.event.body, redacted);
    evs.push_back(std::move(e));
  }
  doc["events"] = std::move(evs);
  json bands = json::array();
  for (const auto& b : t.bands)
    bands.push_back({{"status", b.status},
                     {"pause_mode", b.pause_mode},
                     {"from_ms", ms_of(b.from_ns)},
                     {"to_ms", ms_of(b.to_ns)},
                     {"from_seq", b.from_seq},
                     {"to_seq", b.to_seq},
                     {"open", b.open}});
  doc["bands"] = std::move(bands);
  json spans = json::array();
  for (const auto& x : t.spans)
    spans.push_back({{"lane", x.lane},
                     {"id", x.id},
                     {"label", redacted ? std::string("(redacted)") : x.label},
                     {"from_ms", ms_of(x.from_ns)},
                     {"to_ms", ms_of(x.to_ns)},
                     {"from_seq", x.from_seq},
                     {"to_seq", x.to_seq},
                     {"open", x.open},
                     {"outcome", x.outcome},
                     {"ok", x.ok},
                     {"row", x.row}});
  doc["spans"] = std::move(spans);
  doc["exec_rows"] = t.exec_rows;
  doc["file_rows"] = t.file_rows;
  return doc;
}

json state_at_json(const std::vector<replay::replay_step>& steps, std::size_t index) {
  const bool redacted = history_redacted(steps);
  const auto& s = steps.at(index);
  json doc;
  doc["event"] = event_view(s, redacted);
  doc["state"] = state_view(s.state, redacted);
  const auto before =
    index == 0 ? actors::initial_state(s.event.sandbox_id) : steps[index - 1].state;
  json changes = cli::diff_json(index == 0 ? 0 : steps[index - 1].event.sequence, s.event.sequence,
                                replay::diff_states(before, s.state), {})["changes"];
  if (redacted)
    for (auto it = changes.begin(); it != changes.end();)
      it = (*it)["field"].get<std::string>().rfind("label.", 0) == 0 ? changes.erase(it)
                                                                     : std::next(it);
  doc["changes"] = std::move(changes);
  return doc;
}

} // namespace sandboxd::console
