#include "actors/timer_queue.hpp"

#include <pthread.h>

#include <algorithm>

namespace sandboxd::actors {

timer_queue::timer_queue(clock_fn clock, fire_fn fire, std::chrono::milliseconds max_sleep)
    : clock_(std::move(clock)), fire_(std::move(fire)), max_sleep_(max_sleep) {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "sbd-timers");
    run();
  });
}

timer_queue::~timer_queue() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void timer_queue::schedule(events::time_point deadline, std::string sandbox_id, timer_kind kind) {
  bool earliest;
  {
    std::lock_guard l(mu_);
    earliest = heap_.empty() || deadline < heap_.top().deadline;
    heap_.push({deadline, std::move(sandbox_id), kind});
  }
  if (earliest)
    cv_.notify_all();
}

std::size_t timer_queue::size() const {
  std::lock_guard l(mu_);
  return heap_.size();
}

void timer_queue::run() {
  std::unique_lock l(mu_);
  while (!stopping_) {
    if (heap_.empty()) {
      cv_.wait_for(l, max_sleep_);
      continue;
    }
    const auto now = clock_();
    if (heap_.top().deadline <= now) {
      entry e = heap_.top();
      heap_.pop();
      l.unlock();
      fire_(e.sandbox_id, e.kind, e.deadline);
      l.lock();
      continue;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(heap_.top().deadline - now) +
                std::chrono::milliseconds(1);
    cv_.wait_for(l, std::min(wait, max_sleep_));
  }
}

} // namespace sandboxd::actors
