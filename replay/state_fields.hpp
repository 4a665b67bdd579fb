// state_fields.hpp — a sandbox's state as a flat list of named, typed fields: what replay
// prints after each event and what diff compares. One list, so the two never disagree.
//
// Fields, in this order (a field that does not apply is left out, not shown empty):
//   status, sequence, tenant, template, runtime, network, limits.memory_mib,
//   limits.cpu_millicores, limits.pids, limits.disk_mib, pause_mode, writable_layer_bytes,
//   execs_in_flight (the count), then "exec.<id>" = "in flight" for each exec in flight,
//   timeouts.idle, timeouts.on_idle, timeouts.idle_pause_mode, timeouts.max_lifetime,
//   timeouts.paused_retention, timeouts.timeout (durations, zero = none), created_at,
//   status_since, last_activity_at (instants, left out before `created`),
//   deadline.idle, deadline.lifetime, deadline.retention (next_deadlines: left out when the
//   timer does not apply), failed_step and failure_reason (status failed only),
//   "label.<key>" for each label.
#pragma once

#include "actors/sandbox_machine.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace sandboxd::replay {

using field_value =
  std::variant<std::string, std::uint64_t, events::time_point, events::nanoseconds>;

struct state_field {
  std::string name;
  field_value value;
  bool operator==(const state_field&) const = default;
};

std::vector<state_field> state_fields(const actors::sandbox_state& s);

// One field that differs between two states; `before` or `after` is empty when the field
// is left out on that side (an exec that started, a timer that stopped applying).
struct field_change {
  std::string name;
  std::optional<field_value> before;
  std::optional<field_value> after;
  bool operator==(const field_change&) const = default;
};

// The fields that differ from `a` to `b`, in the order of `b`'s fields, then those only
// `a` has, in the order of `a`'s. Empty when the states show the same.
std::vector<field_change> diff_states(const actors::sandbox_state& a,
                                      const actors::sandbox_state& b);

} // namespace sandboxd::replay
