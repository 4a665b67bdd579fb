// The fold of a sandbox's history, one evolve per event.
#include "replay/replay_fold.hpp"

namespace sandboxd::replay {

std::vector<replay_step> fold_history(const std::string& sandbox_id,
                                      std::vector<history_entry> history,
                                      const replay_bound& bound) {
  std::vector<replay_step> steps;
  steps.reserve(history.size());
  auto state = actors::initial_state(sandbox_id);
  for (auto& h : history) {
    if (!bound.admits(h.event))
      break;
    actors::apply(state, h.event);
    steps.push_back({h.partition, h.offset, std::move(h.event), state});
  }
  return steps;
}

actors::sandbox_state state_after(const std::string& sandbox_id,
                                  const std::vector<replay_step>& steps, std::uint64_t sequence) {
  const actors::sandbox_state* found = nullptr;
  for (const auto& s : steps)
    if (s.event.sequence <= sequence)
      found = &s.state;
  return found ? *found : actors::initial_state(sandbox_id);
}

} // namespace sandboxd::replay
