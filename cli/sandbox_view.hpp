// sandbox_view — a sandbox as sandboxctl shows it: `get`, `create`, `pause`, `resume` and
// `set-timeout` (the whole sandbox, from its actor) and `list` (rows of the read model).
//
// JSON fields (snake_case; times RFC 3339 UTC; durations in seconds, 0 = off):
//   id, state, template, runtime, tenant, limits {memory_mib, cpu_millicores, pids,
//   disk_mib}, labels {key: value}, created_at, end_time (null: none), pause_mode (null
//   unless pausing, paused or resuming), idle_timeout_seconds, lifetime_seconds,
//   paused_retention_seconds, on_timeout, writable_bytes, failure (null unless failed),
//   sequence.
// A list row: id, state, template, limits, labels, pause_mode, writable_bytes, created_at,
// updated_at, sequence.
#pragma once

#include "api/client.hpp"
#include "cli/json_util.hpp"

#include <string>
#include <vector>

namespace sandboxd::cli {

json sandbox_json(const api::sandbox_info& s);
// "key: value" lines; `now` makes the end time relative too ("in 4m59s").
std::string sandbox_text(const api::sandbox_info& s, events::time_point now);

json sandbox_row_json(const api::sandbox_summary& s);
std::string sandbox_table(const std::vector<api::sandbox_summary>& rows);

// "team=search,tier=free" (empty: "-").
std::string labels_text(const std::vector<events::label>& labels);
// "1", "0.5": millicores as CPUs.
std::string cpus_text(std::uint32_t millicores);

} // namespace sandboxd::cli
