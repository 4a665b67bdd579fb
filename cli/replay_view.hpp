// replay_view — replay and diff as sandboxctl shows them.
//
// A state is the fields of replay/state_fields.hpp as one flat JSON object: instants as RFC
// 3339 strings, durations in seconds under the field's name + "_seconds", counts as numbers.
// Text shows the same object as key=value pairs (pairs_text), so the views never disagree.
//   replay text:  the event's line (event_view), then "  => key=value ..." (the state after);
//   replay JSON:  one document per event, {"event": {...event_json}, "state": {...}};
//   diff text:    "FIELD: BEFORE -> AFTER" per change ("-" where a field does not apply),
//                 then the events between the two points;
//   diff JSON:    {"from_seq", "to_seq", "changes": [{"field", "before", "after"}],
//                 "events": [...]}.
#pragma once

#include "cli/json_util.hpp"
#include "replay/replay_fold.hpp"
#include "replay/state_fields.hpp"

#include <string>
#include <vector>

namespace sandboxd::cli {

json state_json(const actors::sandbox_state& s);
json step_json(const replay::replay_step& step);
std::string step_text(const replay::replay_step& step);

json diff_json(std::uint64_t from_seq, std::uint64_t to_seq,
               const std::vector<replay::field_change>& changes,
               const std::vector<replay::replay_step>& between);
std::string diff_text(const std::vector<replay::field_change>& changes,
                      const std::vector<replay::replay_step>& between);

} // namespace sandboxd::cli
