// file_log.hpp — the embedded event log: segment files under a data directory, as
// trustworthy as a database's write-ahead log. The format is docs/log-format.md.
//
// Guarantees, beyond those of event_log:
// - Durable means fdatasync returned: an append completes only after the batch holding
//   its records was written and synced. Appends that arrive while a sync is in flight
//   share the next one (group commit), which the writer starts as soon as that sync
//   returned — or, when the synced batch's appends have callbacks, as soon as those
//   callbacks ran, so that what they append goes into that next batch too. One writer
//   thread does all writing; one completion thread releases the appenders (runs the
//   callbacks, wakes append_and_wait), in the order the batches were committed.
// - Opening scans the last segment, cuts a torn or partial last batch (only the last
//   write, never acknowledged, can be torn) and never drops an acknowledged record.
// - Damage anywhere else (a bad CRC, a batch that does not check out, an offset out of
//   sequence) is a log_fault naming the segment file and the byte position — never a
//   silent skip. Records are checked again on every read.
// - One process at a time: a second open of the same directory, from this process or
//   another, throws a log_fault that names the holder's pid.
// - Records are kept forever; nothing is deleted or compacted.
// - After a write or sync fails, the log takes no more appends (the state of the file
//   after a failed fsync is unknown); reopening it recovers from what is on disk.
#pragma once

#include "events/event_log.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace sandboxd::events {

struct file_log_options {
  std::string dir; // created when missing
  // The partition count of a new log. An existing log keeps its own; opening it with a
  // different count is a log_fault (keys would move between partitions).
  std::int32_t partitions = 8;
  // A segment is closed and a new one started before a batch would take it past this.
  std::uint64_t segment_bytes = std::uint64_t{64} << 20;
  // Appends wait while this many encoded bytes are queued and not yet written.
  std::size_t max_pending_bytes = std::size_t{64} << 20;
};

// What opening found on disk.
struct file_log_recovery {
  std::uint64_t segments = 0;
  std::uint64_t records = 0;
  std::uint64_t segments_scanned = 0; // the rest had a valid index
  std::uint64_t truncated_bytes = 0;  // torn tail cut from the last segment
  std::string truncated_segment;
};

class file_log final : public event_log {
public:
  // Opens the log in options.dir, creating it when missing. Throws log_fault.
  explicit file_log(const file_log_options& options);
  // Writes and syncs every queued append (their completions run), then closes. No other
  // thread may be inside a member function.
  ~file_log() override;
  file_log(const file_log&) = delete;
  file_log& operator=(const file_log&) = delete;

  using event_log::append;
  std::int32_t partitions() const override;
  // Appends `batch` and blocks until its records are durable or the append failed: what
  // append(batch).get() returns, without a callback or a promise per append (the
  // appenders of one group commit are released together, by one wake-up call). Not from a
  // completion callback: that is an invalid_argument error (it would wait for itself).
  append_result append_and_wait(const std::vector<log_record>& batch);
  std::string describe() const override;

  const file_log_recovery& recovery() const;

protected:
  void do_append(std::vector<log_record> batch, append_callback done) override;
  read_result do_read(std::int32_t partition, std::int64_t from, std::size_t max) override;
  offset_result do_end_offset(std::int32_t partition) override;
  bool do_wait_for(std::int32_t partition, std::int64_t offset,
                   std::chrono::milliseconds timeout) override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::events
