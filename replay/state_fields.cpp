// The fields of a sandbox state, and the difference of two states field by field.
#include "replay/state_fields.hpp"

#include <unordered_map>

namespace sandboxd::replay {

std::vector<state_field> state_fields(const actors::sandbox_state& s) {
  std::vector<state_field> f;
  auto add = [&](std::string name, field_value v) { f.push_back({std::move(name), std::move(v)}); };
  auto count = [](auto n) { return static_cast<std::uint64_t>(n); };
  add("status", std::string(actors::to_string(s.status)));
  add("sequence", s.sequence);
  const bool exists = s.status != actors::sandbox_status::absent;
  if (exists) {
    const auto& spec = s.spec;
    add("tenant", s.tenant);
    add("template", spec.template_name);
    add("runtime", events::to_string(spec.runtime));
    add("network", events::to_string(spec.network.mode));
    add("limits.memory_mib", count(spec.limits.memory_mib));
    add("limits.cpu_millicores", count(spec.limits.cpu_millicores));
    add("limits.pids", count(spec.limits.pids));
    add("limits.disk_mib", count(spec.limits.disk_mib));
    add("pause_mode", events::to_string(s.pause_mode));
    add("writable_layer_bytes", s.writable_layer_bytes);
  }
  add("execs_in_flight", count(s.execs_in_flight.size()));
  for (const auto& id : s.execs_in_flight)
    add("exec." + id, std::string("in flight"));
  if (exists) {
    const auto& t = s.spec.timeouts;
    add("timeouts.idle", t.idle_timeout);
    add("timeouts.on_idle", events::to_string(t.on_idle));
    add("timeouts.idle_pause_mode", events::to_string(t.idle_pause_mode));
    add("timeouts.max_lifetime", t.max_lifetime);
    add("timeouts.paused_retention", t.paused_retention);
    add("timeouts.timeout", t.timeout);
    add("created_at", s.created_at);
    add("status_since", s.status_since);
    add("last_activity_at", s.last_activity_at);
  }
  const auto d = actors::next_deadlines(s);
  if (d.idle)
    add("deadline.idle", *d.idle);
  if (d.lifetime)
    add("deadline.lifetime", *d.lifetime);
  if (d.retention)
    add("deadline.retention", *d.retention);
  if (s.status == actors::sandbox_status::failed) {
    add("failed_step", events::to_string(s.failed_step));
    add("failure_reason", s.failure_reason);
  }
  for (const auto& l : s.spec.labels)
    add("label." + l.key, l.value);
  return f;
}

std::vector<field_change> diff_states(const actors::sandbox_state& a,
                                      const actors::sandbox_state& b) {
  const auto before = state_fields(a);
  const auto after = state_fields(b);
  std::unordered_map<std::string, const field_value*> old;
  for (const auto& f : before)
    old.emplace(f.name, &f.value);
  std::vector<field_change> out;
  for (const auto& f : after) {
    auto it = old.find(f.name);
    if (it == old.end()) {
      out.push_back({f.name, std::nullopt, f.value});
      continue;
    }
    if (*it->second != f.value)
      out.push_back({f.name, *it->second, f.value});
    old.erase(it);
  }
  for (const auto& f : before)
    if (old.count(f.name))
      out.push_back({f.name, f.value, std::nullopt});
  return out;
}

} // namespace sandboxd::replay
