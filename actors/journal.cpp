#include "actors/journal.hpp"

#include <algorithm>

namespace sandboxd::actors {
namespace {

// The journal whose issue() loop is running on this thread, and the round a completion
// that ran inside its log append (a refusal on the calling thread) left for it to issue.
struct issuing {
  const journal* j = nullptr;
  void* next = nullptr;
};
thread_local issuing t_issuing;

} // namespace

journal::journal(events::event_log& log) : log_(log) {
  partitions_ = std::max<std::int32_t>(log.partitions(), 0);
  acknowledged_end_ =
    std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(partitions_));
  for (std::int32_t p = 0; p < partitions_; ++p) {
    auto end = log.end_offset(p);
    acknowledged_end_[static_cast<std::size_t>(p)].store(end.ok() ? end.offset : 0);
  }
}

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
  const issuing outer = t_issuing;
  while (!round.empty()) {
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
    std::vector<waiting> next;
    t_issuing = {this, &next};
    log_.append(std::move(batch), [this, shared](events::append_result r) {
      auto after = completed(*shared, std::move(r));
      if (after.empty())
        return;
      if (t_issuing.j == this) // completed inside log_.append: the loop below issues it
        *static_cast<std::vector<waiting>*>(t_issuing.next) = std::move(after);
      else
        issue(std::move(after));
    });
    t_issuing = outer;
    round = std::move(next);
  }
}

std::vector<journal::waiting> journal::completed(std::vector<waiting>& round,
                                                 events::append_result result) {
  std::size_t at = 0;
  std::uint64_t count = 0;
  if (result.ok())
    for (const auto& p : result.positions)
      if (p.partition >= 0 && p.partition < partitions_) {
        auto& end = acknowledged_end_[static_cast<std::size_t>(p.partition)];
        std::int64_t seen = end.load(std::memory_order_relaxed);
        while (seen < p.offset + 1 &&
               !end.compare_exchange_weak(seen, p.offset + 1, std::memory_order_relaxed)) {
        }
      }
  for (auto& w : round) {
    events::append_result mine;
    if (!result.ok()) {
      mine.failure = result.failure;
      mine.maybe_stored = result.maybe_stored;
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
  std::lock_guard l(mu_);
  records_appended_ += count;
  if (queue_.empty()) {
    in_flight_ = false;
    idle_cv_.notify_all();
    return next;
  }
  next.swap(queue_);
  return next;
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

std::int64_t journal::acknowledged_end(std::int32_t partition) const {
  if (partition < 0 || partition >= partitions_)
    return 0;
  return acknowledged_end_[static_cast<std::size_t>(partition)].load(std::memory_order_relaxed);
}

} // namespace sandboxd::actors
