// replay_fold.hpp — a sandbox's history folded with the state machine's evolve, from its
// initial state: the state after each event, up to a bound (a sequence number or an
// instant). This is the state the sandbox's actor held after the same events: the actor
// applies each event it persists with the same evolve (actors/sandbox_machine.hpp).
//
// Guarantees:
// - steps[i].state is evolve applied to every event of steps[0..i], in log order; a
//   duplicate (a sequence at or below the state's) is listed and leaves the state as it
//   was, as evolve treats it.
// - The bound keeps the events of the history's prefix within it: sequence <= until_seq,
//   occurred_at <= at (both, when both are given). The last step's state is the answer to
//   "what was this sandbox after sequence N / at time T".
// - A gap in the sequence is a fault of the log: std::invalid_argument from evolve.
#pragma once

#include "actors/sandbox_machine.hpp"
#include "replay/sandbox_history.hpp"

#include <optional>
#include <string>
#include <vector>

namespace sandboxd::replay {

struct replay_step {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  events::event event;
  actors::sandbox_state state; // after event
};

struct replay_bound {
  std::optional<std::uint64_t> until_seq;
  std::optional<events::time_point> at;

  bool admits(const events::event& e) const {
    return (!until_seq || e.sequence <= *until_seq) && (!at || e.occurred_at <= *at);
  }
};

std::vector<replay_step> fold_history(const std::string& sandbox_id,
                                      std::vector<history_entry> history,
                                      const replay_bound& bound = {});

// The state after the last step with a sequence at or below `sequence`: the initial state
// (status absent) when there is none.
actors::sandbox_state state_after(const std::string& sandbox_id,
                                  const std::vector<replay_step>& steps, std::uint64_t sequence);

} // namespace sandboxd::replay
