// projector — the projection runner: reads the event log and applies it to the read
// models in PostgreSQL, exactly once.
//
// A projector has a name. PostgreSQL holds, per (name, partition), the next offset to read
// (projection_offsets). One step is one transaction: lock the offset rows (FOR UPDATE, so
// two projectors never apply one partition twice), read up to max_batch records after them,
// apply the events (read_models.hpp) and store the new offsets, then commit. A crash at any
// point either keeps the whole step or none of it, so the read models see every event once:
// none skipped, none twice. Duplicates that the log itself holds (a retried Kafka append)
// are dropped by their per-sandbox sequence number.
//
// While PostgreSQL applies a step's batch, a second thread (started once, like the two that
// hash the audit chain and compute billing rows) already reads and decodes the batch after
// it (prefetch), from the offsets this step will commit. The next step uses it
// only if the offsets it locks are exactly the ones the prefetch started from (this step
// committed and nobody else did since) and it holds records; otherwise it is discarded and
// the step reads the log itself. A batch is any run of records after the locked offsets, so
// exactly-once never depends on the prefetch.
//
// run() repeats steps on a thread of its own; when PostgreSQL or the log fails it drops the
// connection, waits (exponential backoff, min_backoff doubling up to max_backoff) and tries
// again from the offsets PostgreSQL has, so nothing is lost across a reconnect. A record
// that does not decode, or a gap in a sandbox's sequence numbers (sequence_gap,
// sequence_guard.hpp), stops progress (retried with backoff, reported in status().last_error;
// the failing batch keeps nothing): billing must never skip an event silently.
#pragma once

#include "base/worker_pool.hpp"
#include "events/event_log.hpp"
#include "projections/log_batch.hpp"
#include "projections/projection_memory.hpp"
#include "projections/read_models.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sandboxd::projections {

struct projector_options {
  std::string name = "read_models";
  std::string schema = "public";        // where the read models live (created and migrated)
  std::vector<std::int32_t> partitions; // the partitions this projector owns; empty: all
  std::size_t max_batch = 40000;        // records per transaction, all partitions together
  std::chrono::milliseconds idle_wait{20};
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // Stop each partition at this offset (exclusive); a rebuild uses the live offsets.
  std::map<std::int32_t, std::int64_t> until;
  // Called after each commit with the committed next offsets of the partitions it moved.
  std::function<void(const std::map<std::int32_t, std::int64_t>&)> on_commit;
  // Called on the projector's thread when a step fails, with why and how many failed in a
  // row (it is retried after a backoff); on_recovery once a step succeeds after failures.
  std::function<void(const std::string& why, std::uint64_t in_a_row)> on_failure;
  std::function<void(std::uint64_t failed_before)> on_recovery;
};

struct partition_lag {
  std::int32_t partition = 0;
  std::int64_t next_offset = 0; // committed
  std::int64_t end_offset = 0;  // of the log, when asked
  std::int64_t lag() const { return end_offset - next_offset; }
};

struct projector_status {
  std::uint64_t steps = 0;
  std::uint64_t applied = 0;    // events that changed the read models
  std::uint64_t duplicates = 0; // events dropped by sequence number
  std::uint64_t failures = 0;   // steps that failed (and were retried)
  std::string last_error;       // "" after a successful step
};

class projector {
public:
  projector(events::event_log& log, std::string conninfo, projector_options options = {});
  ~projector();
  projector(const projector&) = delete;
  projector& operator=(const projector&) = delete;

  // One transaction. Returns the number of records it consumed (0: nothing new). Throws on
  // a fault (PostgreSQL, the log, an undecodable record, a sequence_gap); nothing of the
  // step is kept then.
  std::size_t step();

  // Steps until every owned partition reached the log's end offset as of the call (or its
  // `until`). Throws like step().
  void catch_up();

  // Runs steps on a background thread, with backoff and reconnect, until stop().
  void start();
  void stop();

  // Committed offsets against the log's end offsets, per owned partition.
  std::vector<partition_lag> lag();
  projector_status status() const;

private:
  // Records read and decoded from `from` on (log_batch.hpp), within the options' limits.
  log_batch fetch(const partition_offsets& from);
  void connect();
  void run();
  std::vector<std::int32_t> owned();

  events::event_log& log_;
  std::string conninfo_;
  projector_options options_;
  struct connection_holder; // pqxx::connection, kept out of this header
  std::unique_ptr<connection_holder> conn_;
  std::size_t wait_cursor_ = 0;
  read_models models_;       // of the step thread, with what they remember
  projection_memory memory_; // whether that can be trusted (projection_memory.hpp)

  mutable std::mutex mutex_; // guards committed_ and status_
  std::map<std::int32_t, std::int64_t> committed_;
  projector_status status_;

  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::future<log_batch> prefetch_; // of the step thread
  // The prefetch's thread, started once. Last: destroyed first, so a prefetch still running
  // finishes before what it reads (log_, options_) goes.
  worker_pool reader_{1, "sbd-prefetch"};
};

} // namespace sandboxd::projections
