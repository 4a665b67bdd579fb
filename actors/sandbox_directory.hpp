// sandbox_directory.hpp — the actor that routes commands, timer firings and wake-ups to the
// sandbox actors, spawning, passivating and reactivating them, and keeps the
// idempotent-create index (invariants in sandbox_directory.cpp). Internal to actors/.
#pragma once

#include "actors/actor_context.hpp"
#include "actors/messages.hpp"
#include "actors/recovery.hpp"

#include <memory>
#include <vector>

namespace sandboxd::actors {

// What recovery found: every sandbox starts dormant, its deadlines scheduled.
struct directory_seed {
  std::vector<recovered_entry> sandboxes;
};

directory_handle spawn_sandbox_directory(caf::actor_system& sys, actor_context* ctx,
                                         std::shared_ptr<directory_seed> seed);

} // namespace sandboxd::actors
