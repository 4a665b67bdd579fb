// Admin.checkDeterminism: actors asked for their states, the log folded to the same points.
#include "api/determinism_check.hpp"

#include "replay/determinism.hpp"
#include "replay/log_states.hpp"
#include "replay/sandbox_history.hpp"

namespace sandboxd::api {

namespace {

void add(determinism_check& out, std::vector<replay::state_mismatch> found) {
  for (auto& m : found)
    out.differences.push_back(
      {std::move(m.sandbox_id), std::move(m.field), std::move(m.live), std::move(m.replayed)});
}

// The actor's answer when it has no state to compare: the failure as a difference.
void add_failure(determinism_check& out, const std::string& id, const events::error& e) {
  out.differences.push_back({id, "actor", "no state: " + e.message, "a state in the log"});
}

determinism_check check_one(actors::control_plane& plane,
                            std::vector<replay::history_entry> history) {
  determinism_check out;
  out.checked = 1;
  const auto id = history.front().event.sandbox_id;
  auto live = plane.get(id, history.front().event.tenant);
  if (!live.ok())
    add_failure(out, id, *live.failure);
  else
    add(out, replay::check_determinism(live.state, std::move(history)));
  return out;
}

determinism_check check_all(actors::control_plane& plane, events::event_log& log) {
  determinism_check out;
  const auto known = replay::fold_log(log);
  replay::sequence_bounds bounds;
  std::vector<actors::sandbox_state> live;
  for (const auto& s : known) {
    auto r = plane.get(s.sandbox_id, s.tenant);
    if (!r.ok()) {
      add_failure(out, s.sandbox_id, *r.failure);
      continue;
    }
    bounds[s.sandbox_id] = r.state.sequence;
    live.push_back(std::move(r.state));
  }
  const auto replayed = replay::fold_log(log, &bounds);
  for (const auto& l : live) {
    const auto* r = replayed.find(l.sandbox_id);
    add(out, replay::compare_states(l, r ? *r : actors::initial_state(l.sandbox_id)));
  }
  out.checked = known.size();
  return out;
}

} // namespace

result<determinism_check> check_determinism(actors::control_plane& plane, events::event_log& log,
                                            const std::string& sandbox_id) {
  try {
    if (sandbox_id.empty())
      return check_all(plane, log);
    auto history = replay::read_history(log, sandbox_id);
    if (history.empty())
      return make_error(errc::not_found, "sandbox " + sandbox_id + " has no events in " +
                                           log.describe() +
                                           "; check the sandbox id (sandboxctl list --all)");
    return check_one(plane, std::move(history));
  } catch (const std::exception& e) {
    return make_error(errc::internal, "the determinism check failed: " + std::string(e.what()));
  }
}

} // namespace sandboxd::api
