// event_log.hpp — the event log: sandboxd's source of truth, behind one interface.
//
// A log has a fixed number of partitions. A record is a key (the sandbox id) and bytes (an
// encoded Event). The partition of a record is partition_for(key): murmur2 of the key,
// exactly as Kafka's Java client computes it, so one sandbox's records stay in one
// partition, in append order, whichever implementation stores them.
//
// Implementations: file_log (events/file_log.hpp, the embedded default) and kafka_log
// (events/kafka_log.hpp). Both pass tests/events/test_log_conformance.cpp.
//
// What every implementation guarantees:
// - Offsets are per partition, dense and increasing from 0: the n-th record stored in a
//   partition has offset n.
// - An append completes exactly once. When it completes without error, every record of
//   the batch is durable (fsynced, or acknowledged by all in-sync Kafka replicas) and the
//   result holds each record's partition and offset, in batch order. A failed append is
//   never reported as durable. A failure says whether the batch is certainly not stored
//   (`maybe_stored` false: the log will never hold any of its records) or whether its fate
//   is unknown (`maybe_stored` true: some or all of its records may be in the log, now or
//   later — a Kafka delivery timeout, a file log that could not undo a failed fsync).
//   An unknown fate is neither success nor failure: the caller learns it from the log
//   (reads its partition back) before deciding anything that depends on it.
// - Resolving an unknown fate: append a later record of the same key (so the same
//   partition) and wait for it. Once that append succeeded, each record of the earlier,
//   maybe-stored append is either in the partition below the later record's offset or will
//   never be stored: reading the partition up to that offset settles it. (kafka_log: the
//   idempotent producer orders a partition's records and fences a timed-out request by
//   bumping its epoch. file_log: after a maybe-stored failure it takes no more appends,
//   so the fate is settled by reopening the log, whose recovery finds the batch whole or
//   cuts it.) Until then the caller must not reuse what the unknown records claimed (a
//   sandbox's next sequence number).
// - Records of one key appended by one caller, each append issued after the previous one
//   was issued, are stored in that order.
// - A record is readable by read() once its append has completed successfully.
// - Every member function is safe to call from many threads at once.
// - Faults that leave the log unusable (corruption found on disk, a second process
//   holding the log) throw log_fault; outcomes a caller handles (a bad argument, brokers
//   unreachable, the log closed) are `error` values.
#pragma once

#include "events/errc.hpp"
#include "events/partitioner.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::events {

// What an append takes: the key chooses the partition; the value is opaque bytes.
struct log_record {
  std::string key;
  std::string value;
};

// Where a record is stored.
struct record_position {
  std::int32_t partition = -1;
  std::int64_t offset = -1;
  bool operator==(const record_position&) const = default;
};

// What a read returns: a stored record and its position.
struct stored_record {
  std::int32_t partition = -1;
  std::int64_t offset = -1;
  std::string key;
  std::string value;
};

// The outcome of one append. On success `positions[i]` is where batch[i] was stored; on
// error `positions` is empty and no record of the batch counts as durable.
struct append_result {
  std::vector<record_position> positions;
  std::optional<error> failure;
  // Set with a failure whose outcome is unknown: the batch may be (partly) stored.
  bool maybe_stored = false;

  bool ok() const { return !failure.has_value(); }
};

// The outcome of a read: records in offset order, starting at the offset asked for.
// Fewer than `max` (possibly none) when the partition ends sooner.
struct read_result {
  std::vector<stored_record> records;
  std::optional<error> failure;

  bool ok() const { return !failure.has_value(); }
};

// The outcome of end_offset: the offset the next record of the partition will get.
struct offset_result {
  std::int64_t offset = -1;
  std::optional<error> failure;

  bool ok() const { return !failure.has_value(); }
};

// A fault: the log cannot be opened or read as it is on disk (corruption, a lock held by
// another process, an I/O error). The message names the file, the position and what to do.
class log_fault : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Called exactly once per append. Runs on a thread of the log (file_log: its completion
// thread; kafka_log: its delivery thread) — or, when the append fails before it is queued
// (bad argument, log closed), on the calling thread before append() returns. It must not
// block for long: the next appends' completions wait for it. It may call append().
using append_callback = std::function<void(append_result)>;

// The front every caller uses is non-virtual: it checks the arguments once, for every
// implementation (a partition out of range, a negative offset, an empty key are
// `invalid_argument` with the same message whatever the log), answers the trivial cases
// (an empty batch, a read of zero records) and hands the rest to the implementation's
// do_* functions, which may assume their arguments are valid.
class event_log {
public:
  virtual ~event_log() = default;

  // The fixed number of partitions.
  virtual std::int32_t partitions() const = 0;

  std::int32_t partition_for(std::string_view key) const {
    return events::partition_for(key, partitions());
  }

  // Appends `batch` (each key non-empty) and calls `done` once the records are durable,
  // or with the error that stopped them.
  void append(std::vector<log_record> batch, append_callback done);

  // The same, with a future for callers that prefer to block.
  std::future<append_result> append(std::vector<log_record> batch);

  // Up to `max` records of `partition` starting at offset `from`, in offset order. Returns
  // at once with no records when `from` is at or past the end; it never waits for records
  // that are not in the log yet (use wait_for). May throw log_fault on corruption.
  read_result read(std::int32_t partition, std::int64_t from, std::size_t max);

  // The offset the next record appended to `partition` will get (= number of records).
  offset_result end_offset(std::int32_t partition);

  // Blocks until a record at `offset` or later is readable in `partition` (true), or until
  // `timeout` passes or the log closes (false). Blocking, not polling: the caller's thread
  // sleeps until an append completes (file_log) or the broker answers a long fetch (kafka).
  // False at once for a partition out of range or a negative offset.
  bool wait_for(std::int32_t partition, std::int64_t offset, std::chrono::milliseconds timeout);

  // "file log /var/lib/sandboxd/log", "kafka log topic events at host:9092", for messages.
  virtual std::string describe() const = 0;

protected:
  // The implementation's side of the calls above, with arguments already checked:
  // `batch` is not empty and every key is; `partition` is in range; `from`/`offset` ≥ 0;
  // `max` > 0.
  virtual void do_append(std::vector<log_record> batch, append_callback done) = 0;
  virtual read_result do_read(std::int32_t partition, std::int64_t from, std::size_t max) = 0;
  virtual offset_result do_end_offset(std::int32_t partition) = 0;
  virtual bool do_wait_for(std::int32_t partition, std::int64_t offset,
                           std::chrono::milliseconds timeout) = 0;

private:
  bool has_partition(std::int32_t partition) const {
    return partition >= 0 && partition < partitions();
  }
};

} // namespace sandboxd::events
