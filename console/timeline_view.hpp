// timeline_view — the JSON documents of the sandbox pages: the timeline (every event of the
// sandbox with its lane and the status after it, the state bands, the exec and file spans)
// and the state at one event. Events and states are written by sandboxctl's own views
// (cli/event_view.hpp, cli/replay_view.hpp), so the console and `sandboxctl replay --json`
// show the same fields with the same values.
//
// Timeline: {"sandbox": {"id", "tenant", "state": {state after the last event}},
//   "redacted", "first_ms", "last_ms", "events": [{"seq", "t_ms", "time", "kind", "lane",
//   "principal", "status", "pause_mode", "payload"}], "bands": [{"status", "pause_mode",
//   "from_ms", "to_ms", "from_seq", "to_seq", "open"}], "spans": [{"lane", "id", "label",
//   "from_ms", "to_ms", "from_seq", "to_seq", "open", "outcome", "ok", "row"}], "exec_rows",
//   "file_rows"}. Times in milliseconds since the Unix epoch (a JSON number holds them
//   exactly to the microsecond), and as RFC 3339 text.
// State at event N: {"event": {sandboxctl's event JSON}, "state": {...}, "changes": [{"field",
//   "before", "after"}] (what this event changed)} — what `sandboxctl --json replay ID
//   --until-seq N` prints as its last line, plus the changes.
//
// Redaction: once a sandbox's history holds a `redacted` event, what a redaction removes from
// the read models (docs/audit-log.md, "Redaction") is left out here too, at every point of the
// history: labels and environment names of `created` and of every state, and the payload of
// every event whose audit row's detail a redaction empties (command lines, paths, messages),
// shown as {"redacted": true}. The log keeps them; `sandboxctl replay` (admin) reads it.
#pragma once

#include "cli/json_util.hpp"
#include "console/timeline.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::console {

bool history_redacted(const std::vector<replay::replay_step>& steps);

cli::json timeline_json(const std::vector<replay::replay_step>& steps, const timeline& t);

// The state after steps[index], its event and what it changed.
cli::json state_at_json(const std::vector<replay::replay_step>& steps, std::size_t index);

} // namespace sandboxd::console
