// actor_context.hpp — the services every sandbox actor and the directory use: the log, the
// driver, the journal, the blocking pool, the timer queues, the clock. One lives in
// control_plane::impl and outlives every actor. Internal to actors/; no CAF in it.
#pragma once

#include "actors/journal.hpp"
#include "actors/timer_queue.hpp"
#include "base/worker_pool.hpp"
#include "events/event_log.hpp"
#include "runtime/driver.hpp"

#include <chrono>
#include <cstdint>

namespace sandboxd::actors {

struct actor_context {
  events::event_log* log = nullptr;
  runtime::driver* driver = nullptr;
  bool driver_never_blocks = false; // lifecycle steps and samples run on the actor's thread
  journal* journal_ = nullptr;
  worker_pool* pool = nullptr;
  timer_queue* timers = nullptr;
  // On the system clock, whatever `clock` is: passivation checks (timer_kind::idle) and
  // retries after a backoff (timer_kind::retry).
  timer_queue* wakeups = nullptr;
  clock_fn clock;
  std::chrono::milliseconds passivate_after{5000};
  events::nanoseconds sample_interval{0};
};

} // namespace sandboxd::actors
