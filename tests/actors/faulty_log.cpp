#include "tests/actors/faulty_log.hpp"

#include <memory>

namespace sandboxd::test {

std::string_view to_string(append_fault f) {
  switch (f) {
  case append_fault::none:
    return "none";
  case append_fault::not_stored:
    return "not_stored";
  case append_fault::maybe_stored_written:
    return "maybe_stored_written";
  case append_fault::maybe_stored_lost:
    return "maybe_stored_lost";
  case append_fault::maybe_stored_late:
    return "maybe_stored_late";
  }
  return "unknown";
}

faulty_log::faulty_log(events::event_log& inner) : inner_(inner) {
  thread_ = std::thread([this] { run(); });
}

faulty_log::~faulty_log() {
  release_late_writes();
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void faulty_log::fail_all(append_fault f) {
  std::lock_guard l(mu_);
  all_ = f;
}

void faulty_log::fail_next(append_fault f, record_match match) {
  std::lock_guard l(mu_);
  next_.emplace_back(f, std::move(match));
}

void faulty_log::fail_randomly(std::uint64_t seed, double not_stored, double maybe_stored) {
  std::lock_guard l(mu_);
  random_ = true;
  rng_.seed(seed);
  p_not_stored_ = not_stored;
  p_maybe_stored_ = maybe_stored;
}

void faulty_log::delay_completions(std::chrono::milliseconds d) {
  std::lock_guard l(mu_);
  delay_ = d;
}

void faulty_log::set_late_by(std::chrono::milliseconds d) {
  std::lock_guard l(mu_);
  late_by_ = d;
}

void faulty_log::on_injected(std::function<void(append_fault)> fn) {
  std::lock_guard l(mu_);
  on_injected_ = std::move(fn);
}

void faulty_log::hold_late_writes() {
  std::lock_guard l(mu_);
  hold_late_ = true;
}

void faulty_log::release_late_writes() {
  std::vector<std::function<void()>> held;
  {
    std::lock_guard l(mu_);
    hold_late_ = false;
    held.swap(held_);
  }
  for (auto& fn : held)
    later(clock::duration::zero(), std::move(fn));
}

std::uint64_t faulty_log::injected(append_fault f) const {
  return injected_[static_cast<std::size_t>(f)].load();
}

append_fault faulty_log::choose(const std::vector<events::log_record>& batch) {
  const auto f = pick(batch);
  if (f != append_fault::none) {
    std::function<void(append_fault)> hook;
    {
      std::lock_guard l(mu_);
      hook = on_injected_;
    }
    if (hook)
      hook(f);
  }
  return f;
}

append_fault faulty_log::pick(const std::vector<events::log_record>& batch) {
  std::lock_guard l(mu_);
  for (auto it = next_.begin(); it != next_.end(); ++it) {
    bool matches = !it->second;
    for (std::size_t i = 0; !matches && i < batch.size(); ++i)
      matches = it->second(batch[i]);
    if (matches) {
      const auto f = it->first;
      next_.erase(it);
      return f;
    }
  }
  if (all_ != append_fault::none)
    return all_;
  if (random_) {
    const double x = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (x < p_not_stored_)
      return append_fault::not_stored;
    if (x < p_not_stored_ + p_maybe_stored_)
      return static_cast<append_fault>(2 + rng_() % 3);
  }
  return append_fault::none;
}

void faulty_log::do_append(std::vector<events::log_record> batch, events::append_callback done) {
  const auto fault = choose(batch);
  ++injected_[static_cast<std::size_t>(fault)];
  auto fail = [](bool maybe) {
    events::append_result r;
    r.failure = events::error{events::errc::unavailable,
                              maybe ? "injected failure: the append's outcome is unknown"
                                    : "injected failure: the append was not stored"};
    r.maybe_stored = maybe;
    return r;
  };
  switch (fault) {
  case append_fault::none:
    if (delay().count() == 0)
      return inner_.append(std::move(batch), std::move(done));
    inner_.append(std::move(batch),
                  [this, done = std::move(done)](events::append_result r) mutable {
                    finish(done, std::move(r));
                  });
    return;
  case append_fault::not_stored:
  case append_fault::maybe_stored_lost: {
    auto shared = std::make_shared<events::append_callback>(std::move(done));
    later(clock::duration::zero(),
          [this, shared, r = fail(fault != append_fault::not_stored)] { finish(*shared, r); });
    return;
  }
  case append_fault::maybe_stored_written:
    inner_.append(std::move(batch), [this, done = std::move(done),
                                     r = fail(true)](events::append_result stored) mutable {
      finish(done, stored.ok() ? r : std::move(stored));
    });
    return;
  case append_fault::maybe_stored_late: {
    auto shared = std::make_shared<events::append_callback>(std::move(done));
    later(clock::duration::zero(), [this, shared, r = fail(true)] { finish(*shared, r); });
    auto records = std::make_shared<std::vector<events::log_record>>(std::move(batch));
    std::function<void()> write = [this, records] {
      inner_.append(std::move(*records), [this](events::append_result) { ++landed_late_; });
    };
    std::chrono::milliseconds late;
    {
      std::lock_guard l(mu_);
      late = late_by_;
      if (hold_late_) {
        held_.push_back(std::move(write));
        return;
      }
    }
    later(late, std::move(write));
    return;
  }
  }
}

std::chrono::milliseconds faulty_log::delay() const {
  std::lock_guard l(mu_);
  return delay_;
}

void faulty_log::finish(events::append_callback& done, events::append_result r) {
  const auto d = delay();
  if (d.count() == 0) {
    done(std::move(r));
    return;
  }
  auto shared = std::make_shared<events::append_callback>(std::move(done));
  later(d, [shared, r = std::move(r)] { (*shared)(r); });
}

void faulty_log::later(clock::duration after, std::function<void()> fn) {
  {
    std::lock_guard l(mu_);
    tasks_.emplace(std::make_pair(clock::now() + after, task_seq_++), std::move(fn));
  }
  cv_.notify_all();
}

void faulty_log::run() {
  std::unique_lock l(mu_);
  for (;;) {
    if (tasks_.empty()) {
      if (stopping_)
        return;
      cv_.wait(l);
      continue;
    }
    auto first = tasks_.begin();
    if (!stopping_ && first->first.first > clock::now()) {
      cv_.wait_until(l, first->first.first);
      continue;
    }
    auto fn = std::move(first->second);
    tasks_.erase(first);
    l.unlock();
    fn();
    l.lock();
  }
}

} // namespace sandboxd::test
