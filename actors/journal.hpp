// journal.hpp — gathers the appends of every sandbox actor into batched log appends.
//
// Guarantees:
// - At most one log append is in flight; appends that arrive meanwhile wait and all go
//   out together as the next one, so the log sees one append (one fsync) per round, however
//   many actors persist at once. A round is issued only after the previous one completed,
//   so rounds never overtake each other: one caller's successive appends are issued, and
//   stored, in the order it made them.
// - Each caller's `done` runs exactly once, with the positions of its own records (in its
//   batch order) or with the failure of the whole round, `maybe_stored` included: a round
//   whose fate is unknown is unknown for every caller in it. A failed round is never
//   reported as durable to anyone.
// - `done` runs on the log's completion thread (or the caller's, for a refused append); it
//   must not block. A log that refuses appends at once does not make rounds recurse: the
//   next round is issued by the loop that issued the refused one.
// - acknowledged_end(p) only grows and is at most partition p's end offset: a record that
//   an append issued after reading it stores in p lands at that offset or later (where an
//   actor starts reading back an append whose fate is unknown).
#pragma once

#include "events/event_log.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace sandboxd::actors {

class journal {
public:
  using done_fn = std::function<void(events::append_result)>;

  // Reads every partition's end offset (a partition that cannot be read starts at 0).
  explicit journal(events::event_log& log);
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

  // The end offset of `partition` as far as completed appends have shown it.
  std::int64_t acknowledged_end(std::int32_t partition) const;

private:
  struct waiting {
    std::vector<events::log_record> records;
    done_fn done;
  };
  void issue(std::vector<waiting> round);
  // Completes `round`; returns the next round to issue (empty: none is due).
  std::vector<waiting> completed(std::vector<waiting>& round, events::append_result result);

  events::event_log& log_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::vector<waiting> queue_;
  bool in_flight_ = false;
  std::uint64_t records_appended_ = 0;
  std::uint64_t rounds_ = 0;
  std::unique_ptr<std::atomic<std::int64_t>[]> acknowledged_end_;
  std::int32_t partitions_ = 0;
};

} // namespace sandboxd::actors
