// timer_queue.hpp — the deadlines of every sandbox's timers, active or passivated, in one
// min-heap served by one thread.
//
// A sandbox's timers are derived from its state (next_deadlines, the storage sample
// interval); the queue only remembers when to look again. Guarantees:
// - `fire` runs once per scheduled entry, on the queue's thread, at or after its deadline
//   by the queue's clock (never before), in deadline order. It must not block.
// - Entries are never cancelled: a firing whose deadline no longer matches the sandbox's
//   state is stale and the receiver drops it. Callers avoid scheduling one deadline twice.
// - The clock is a function, so tests drive it by hand; the thread looks at it at least
//   every `max_sleep`.
#pragma once

#include "events/event.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

namespace sandboxd::actors {

using clock_fn = std::function<events::time_point()>;

// The first k_timer_kinds are a sandbox's state timers. `retry` is no state timer: the
// actors' wake-up queue uses it for an append retried after a backoff (and `idle` there for
// a passivation check).
enum class timer_kind : std::uint8_t {
  idle = 0,
  lifetime = 1,
  retention = 2,
  sample = 3,
  timeout = 4,
  retry = 5
};
inline constexpr std::size_t k_timer_kinds = 5;

class timer_queue {
public:
  using fire_fn = std::function<void(const std::string& sandbox_id, timer_kind kind,
                                     events::time_point deadline)>;

  timer_queue(clock_fn clock, fire_fn fire, std::chrono::milliseconds max_sleep);
  ~timer_queue();
  timer_queue(const timer_queue&) = delete;
  timer_queue& operator=(const timer_queue&) = delete;

  void schedule(events::time_point deadline, std::string sandbox_id, timer_kind kind);
  std::size_t size() const;

private:
  struct entry {
    events::time_point deadline;
    std::string sandbox_id;
    timer_kind kind;
    bool operator>(const entry& o) const { return deadline > o.deadline; }
  };
  void run();

  clock_fn clock_;
  fire_fn fire_;
  std::chrono::milliseconds max_sleep_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> heap_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace sandboxd::actors
