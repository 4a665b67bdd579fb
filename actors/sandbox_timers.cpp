// sandbox_timers.cpp — a sandbox actor's timers (derived from its state, armed in the timer
// queue when they change) and its wake-ups on the system clock: passivation checks and the
// backoff of retries.
#include "actors/sandbox_actor_state.hpp"

namespace sandboxd::actors {

bool passivatable(const sandbox_actor_state& st) {
  const auto status = st.s.status;
  const bool idle_status = status == sandbox_status::paused || status == sandbox_status::deleted ||
                           status == sandbox_status::absent || status == sandbox_status::failed;
  return idle_status && st.queue.empty() && !st.persisting && !st.call_in_flight &&
         st.execs_running == 0 && st.ops_running == 0 && !st.sampling && st.settling.empty() &&
         !st.broken && !st.unresolved && st.retry.empty();
}

void arm_timers(sandbox_actor_state& st) {
  if (st.unresolved || !st.retry.empty())
    return; // a firing could not be recorded now; armed again once the log takes appends
  const auto d = next_deadlines(st.s);
  std::array<std::optional<events::time_point>, k_timer_kinds> want{d.idle, d.lifetime, d.retention,
                                                                    std::nullopt, d.timeout};
  if (st.ctx->sample_interval.count() > 0 &&
      (st.s.status == sandbox_status::running || st.s.status == sandbox_status::paused))
    want[static_cast<std::size_t>(timer_kind::sample)] = st.sample_due;
  for (std::size_t k = 0; k < k_timer_kinds; ++k)
    if (want[k] && want[k] != st.armed[k]) {
      st.ctx->timers->schedule(*want[k], st.id, static_cast<timer_kind>(k));
      st.armed[k] = want[k];
    }
}

void on_timer(sandbox_actor_state& st, timer_kind kind, events::time_point deadline) {
  if (static_cast<std::size_t>(kind) >= k_timer_kinds)
    return; // not a state timer
  auto& armed = st.armed[static_cast<std::size_t>(kind)];
  if (armed != deadline)
    return; // stale: a later deadline replaced it
  armed.reset();
  switch (kind) {
  case timer_kind::sample:
    st.sample_due = st.ctx->clock() + st.ctx->sample_interval;
    if (st.s.status == sandbox_status::running || st.s.status == sandbox_status::paused)
      start_sample(st);
    break;
  case timer_kind::idle:
    st.queue.push_back(system_request(st.s, cmd::idle_timer{}));
    break;
  case timer_kind::lifetime:
    st.queue.push_back(system_request(st.s, cmd::lifetime_timer{}));
    break;
  case timer_kind::retention:
    st.queue.push_back(system_request(st.s, cmd::retention_timer{}));
    break;
  case timer_kind::timeout:
    st.queue.push_back(system_request(st.s, cmd::timeout_timer{}));
    break;
  case timer_kind::retry:
    break;
  }
  pump(st);
}

void schedule_idle_check(sandbox_actor_state& st, std::chrono::steady_clock::duration wait) {
  if (st.check_pending || !passivatable(st))
    return;
  st.check_pending = true;
  const auto now =
    std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
  st.ctx->wakeups->schedule(now + duration_cast<events::nanoseconds>(wait), st.id,
                            timer_kind::idle);
}

void schedule_retry(sandbox_actor_state& st) {
  if (st.wakeup_pending)
    return;
  st.backoff = st.backoff.count() == 0 ? k_backoff_min : std::min(st.backoff * 2, k_backoff_max);
  st.wakeup_pending = true;
  const auto now =
    std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
  st.ctx->wakeups->schedule(now + duration_cast<events::nanoseconds>(st.backoff), st.id,
                            timer_kind::retry);
}
} // namespace sandboxd::actors
