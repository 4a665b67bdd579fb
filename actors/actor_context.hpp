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
#include <functional>
#include <map>
#include <string>

namespace sandboxd::actors {

struct actor_context {
  events::event_log* log = nullptr;
  runtime::driver* driver = nullptr; // every runtime kind's, when `drivers` is empty
  std::map<events::runtime_kind, runtime::driver*> drivers;
  // The driver of sandboxes of `kind` (nullptr: the node has none).
  runtime::driver* driver_for(events::runtime_kind kind) const {
    if (drivers.empty())
      return driver;
    auto it = drivers.find(kind);
    return it == drivers.end() ? nullptr : it->second;
  }
  bool driver_never_blocks = false; // lifecycle steps and samples run on the actor's thread
  journal* journal_ = nullptr;
  worker_pool* pool = nullptr;
  // Execs run here, not on `pool`: a long exec must not hold a thread lifecycle steps wait for.
  worker_pool* exec_pool = nullptr;
  timer_queue* timers = nullptr;
  // On the system clock, whatever `clock` is: passivation checks (timer_kind::idle) and
  // retries after a backoff (timer_kind::retry).
  timer_queue* wakeups = nullptr;
  clock_fn clock;
  std::chrono::milliseconds passivate_after{5000};
  events::nanoseconds sample_interval{0};
  // control_plane_options::template_use.
  std::function<void(const std::string&, const std::string&, bool)> template_use;
};

} // namespace sandboxd::actors
