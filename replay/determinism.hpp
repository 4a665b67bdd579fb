// determinism.hpp — the state a sandbox's live actor holds against the state replayed from
// its events: `sandboxctl check determinism`.
//
// The two are compared at the same sequence number: the replay stops at the sequence the
// actor's state carries (fold_history's bound), so events the actor applied after the log
// was read do not show as differences, and events in the log beyond the actor's state (which
// persist-then-apply forbids) show as a differing sequence. Equal means equal as values
// (sandbox_state's ==, every member); the differences name the fields of state_fields that
// differ, or "state" when only members state_fields does not show (the spec's environment,
// file operations in flight) differ.
#pragma once

#include "actors/sandbox_machine.hpp"
#include "replay/sandbox_history.hpp"

#include <string>
#include <vector>

namespace sandboxd::replay {

struct state_mismatch {
  std::string sandbox_id;
  std::string field;
  std::string live;     // "" when the live state leaves the field out
  std::string replayed; // "" when the replayed state leaves it out
  bool operator==(const state_mismatch&) const = default;
};

// `live` against the fold of `history` (the sandbox's events in log order) up to live's
// sequence. Empty when they are equal.
std::vector<state_mismatch> check_determinism(const actors::sandbox_state& live,
                                              std::vector<history_entry> history);

// `live` against `replayed` as they are. Empty when they are equal.
std::vector<state_mismatch> compare_states(const actors::sandbox_state& live,
                                           const actors::sandbox_state& replayed);

} // namespace sandboxd::replay
