// replay_view: the replay and diff views (replay_view.hpp), built on the event views.
#include "cli/replay_view.hpp"

#include "cli/event_view.hpp"
#include "cli/time_arg.hpp"

namespace sandboxd::cli {

namespace {

// A field under its JSON key: durations get "_seconds" (pairs_text shows them as durations).
void put(json& j, const std::string& name, const replay::field_value& v) {
  std::visit(
    [&](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, events::time_point>)
        j[name] = format_time(x);
      else if constexpr (std::is_same_v<T, events::nanoseconds>)
        j[name + "_seconds"] = std::chrono::duration<double>(x).count();
      else
        j[name] = x;
    },
    v);
}

std::string value_text(const std::string& name, const std::optional<replay::field_value>& v) {
  if (!v)
    return "-";
  json j = json::object();
  put(j, name, *v);
  const std::string pair = pairs_text(j); // "name=value"
  return pair.substr(pair.find('=') + 1);
}

api::streamed_event streamed(const replay::replay_step& s) {
  return {s.event, s.partition, s.offset};
}

} // namespace

json state_json(const actors::sandbox_state& s) {
  json j = json::object();
  for (const auto& f : replay::state_fields(s))
    put(j, f.name, f.value);
  return j;
}

json step_json(const replay::replay_step& step) {
  return {{"event", event_json(streamed(step))}, {"state", state_json(step.state)}};
}

std::string step_text(const replay::replay_step& step) {
  return event_line(streamed(step)) + "  => " + pairs_text(state_json(step.state)) + "\n";
}

json diff_json(std::uint64_t from_seq, std::uint64_t to_seq,
               const std::vector<replay::field_change>& changes,
               const std::vector<replay::replay_step>& between) {
  json c = json::array();
  for (const auto& ch : changes) {
    json before = json::object(), after = json::object();
    if (ch.before)
      put(before, ch.name, *ch.before);
    if (ch.after)
      put(after, ch.name, *ch.after);
    c.push_back({{"field", ch.name},
                 {"before", before.empty() ? json(nullptr) : before.begin().value()},
                 {"after", after.empty() ? json(nullptr) : after.begin().value()}});
  }
  json ev = json::array();
  for (const auto& s : between)
    ev.push_back(event_json(streamed(s)));
  return {{"from_seq", from_seq}, {"to_seq", to_seq}, {"changes", c}, {"events", ev}};
}

std::string diff_text(const std::vector<replay::field_change>& changes,
                      const std::vector<replay::replay_step>& between) {
  std::string out;
  for (const auto& ch : changes)
    out += ch.name + ": " + value_text(ch.name, ch.before) + " -> " +
           value_text(ch.name, ch.after) + "\n";
  if (changes.empty())
    out += "(no field changed)\n";
  out += "events:\n";
  for (const auto& s : between)
    out += "  " + event_line(streamed(s));
  return out;
}

} // namespace sandboxd::cli
