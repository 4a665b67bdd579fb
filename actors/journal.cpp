#include "actors/journal.hpp"

#include <memory>

namespace sandboxd::actors {

void journal::append(std::vector<events::log_record> records, done_fn done) {
  std::vector<waiting> round;
  {
    std::lock_guard l(mu_);
    queue_.push_back({std::move(records), std::move(done)});
    if (in_flight_)
      return;
    in_flight_ = true;
    round.swap(queue_);
  }
  issue(std::move(round));
}

void journal::issue(std::vector<waiting> round) {
  std::size_t total = 0;
  for (const auto& w : round)
    total += w.records.size();
  std::vector<events::log_record> batch;
  batch.reserve(total);
  for (auto& w : round)
    for (auto& r : w.records)
      batch.push_back(std::move(r));
  auto shared = std::make_shared<std::vector<waiting>>(std::move(round));
  {
    std::lock_guard l(mu_);
    ++rounds_;
  }
  log_.append(std::move(batch),
              [this, shared](events::append_result r) { completed(*shared, std::move(r)); });
}

void journal::completed(std::vector<waiting>& round, events::append_result result) {
  std::size_t at = 0;
  std::uint64_t count = 0;
  for (auto& w : round) {
    events::append_result mine;
    if (!result.ok()) {
      mine.failure = result.failure;
    } else {
      const std::size_t n = w.records.size();
      mine.positions.assign(result.positions.begin() + static_cast<std::ptrdiff_t>(at),
                            result.positions.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
      count += n;
    }
    w.done(std::move(mine));
  }
  std::vector<waiting> next;
  {
    std::lock_guard l(mu_);
    records_appended_ += count;
    if (queue_.empty()) {
      in_flight_ = false;
      idle_cv_.notify_all();
      return;
    }
    next.swap(queue_);
  }
  issue(std::move(next));
}

void journal::wait_idle() {
  std::unique_lock l(mu_);
  idle_cv_.wait(l, [&] { return !in_flight_ && queue_.empty(); });
}

std::uint64_t journal::records_appended() const {
  std::lock_guard l(mu_);
  return records_appended_;
}

std::uint64_t journal::rounds() const {
  std::lock_guard l(mu_);
  return rounds_;
}

} // namespace sandboxd::actors
