// determinism_check — Admin.checkDeterminism: the state each sandbox's actor holds against
// the state replayed from the sandbox's events in the log (replay/determinism.hpp).
//
// For one sandbox its history is read and folded up to the sequence the actor's state
// carries. For every sandbox the log is folded twice (replay::fold_log): once to learn the
// sandboxes and their tenants, whose actors are then asked for their states, and once bounded
// by those states' sequences, so calls that keep changing sandboxes meanwhile show no
// difference. Blocks (the log, the actors): run it on a worker thread.
#pragma once

#include "actors/control_plane.hpp"
#include "api/records.hpp"
#include "api/result.hpp"
#include "events/event_log.hpp"

#include <string>

namespace sandboxd::api {

// `sandbox_id` "" checks every sandbox of the log. not_found when the log holds no event of
// the sandbox; internal when the log cannot be read.
result<determinism_check> check_determinism(actors::control_plane& plane, events::event_log& log,
                                            const std::string& sandbox_id);

} // namespace sandboxd::api
