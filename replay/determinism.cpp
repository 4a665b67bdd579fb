// The determinism check: a fold to the live state's sequence, compared field by field.
#include "replay/determinism.hpp"

#include "replay/replay_fold.hpp"
#include "replay/state_fields.hpp"

#include <type_traits>

namespace sandboxd::replay {

namespace {

std::string text(const std::optional<field_value>& v) {
  if (!v)
    return "";
  return std::visit(
    [](const auto& x) -> std::string {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, std::string>)
        return x;
      else if constexpr (std::is_same_v<T, std::uint64_t>)
        return std::to_string(x);
      else if constexpr (std::is_same_v<T, events::time_point>)
        return std::to_string(x.time_since_epoch().count()) + " ns since the epoch";
      else
        return std::to_string(x.count()) + " ns";
    },
    *v);
}

} // namespace

std::vector<state_mismatch> compare_states(const actors::sandbox_state& live,
                                           const actors::sandbox_state& replayed) {
  std::vector<state_mismatch> out;
  if (live == replayed)
    return out;
  for (const auto& c : diff_states(live, replayed))
    out.push_back({live.sandbox_id, c.name, text(c.before), text(c.after)});
  if (out.empty())
    out.push_back({live.sandbox_id, "state", "differs in a member replay does not show",
                   "(spec, environment or file operations in flight)"});
  return out;
}

std::vector<state_mismatch> check_determinism(const actors::sandbox_state& live,
                                              std::vector<history_entry> history) {
  replay_bound bound;
  bound.until_seq = live.sequence;
  const auto steps = fold_history(live.sandbox_id, std::move(history), bound);
  const auto replayed = steps.empty() ? actors::initial_state(live.sandbox_id) : steps.back().state;
  return compare_states(live, replayed);
}

} // namespace sandboxd::replay
