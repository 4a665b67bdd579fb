// sandbox_actor.hpp — one actor per sandbox: decide with the pure state machine, persist
// through the journal, then reply and act on the runtime (docs/actors.md). Its state and
// steps are sandbox_actor_state.hpp; this is the CAF shell around them. Internal to actors/.
#pragma once

#include "actors/actor_context.hpp"
#include "actors/messages.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::actors {

// Spawns the actor of `sandbox_id`, its state rebuilt from the events at `offsets` of its
// partition (none: a new sandbox). `timers_scheduled`: the timer queue already holds the
// deadlines derived from that state (a reactivation), so they are not scheduled again.
sandbox_actor_handle spawn_sandbox_actor(caf::local_actor* parent, actor_context* ctx,
                                         directory_handle directory, std::string sandbox_id,
                                         std::vector<std::int64_t> offsets, bool timers_scheduled);

} // namespace sandboxd::actors
