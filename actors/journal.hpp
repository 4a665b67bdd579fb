// journal.hpp — gathers the appends of every sandbox actor into batched log appends.
//
// Guarantees:
// - At most one log append is in flight; appends that arrive meanwhile wait and all go
//   out together as the next one, so the log sees one append (one fsync) per round, however
//   many actors persist at once.
// - Each caller's `done` runs exactly once, with the positions of its own records (in its
//   batch order) or with the error that failed the whole round. A failed round is never
//   reported as durable to anyone.
// - Records keep their queue order: one caller's successive appends are stored in the order
//   they were issued.
// - `done` runs on the log's completion thread (or the caller's, for a refused append); it
//   must not block.
#pragma once

#include "events/event_log.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace sandboxd::actors {

class journal {
public:
  using done_fn = std::function<void(events::append_result)>;

  explicit journal(events::event_log& log) : log_(log) {}
  // Waits until no append is queued or in flight.
  ~journal() { wait_idle(); }
  journal(const journal&) = delete;
  journal& operator=(const journal&) = delete;

  void append(std::vector<events::log_record> records, done_fn done);

  // Blocks until every append issued so far has completed.
  void wait_idle();

  // Records made durable so far, and log appends issued (rounds).
  std::uint64_t records_appended() const;
  std::uint64_t rounds() const;

private:
  struct waiting {
    std::vector<events::log_record> records;
    done_fn done;
  };
  void issue(std::vector<waiting> round);
  void completed(std::vector<waiting>& round, events::append_result result);

  events::event_log& log_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::vector<waiting> queue_;
  bool in_flight_ = false;
  std::uint64_t records_appended_ = 0;
  std::uint64_t rounds_ = 0;
};

} // namespace sandboxd::actors
