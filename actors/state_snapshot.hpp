// state_snapshot.hpp — per-partition state snapshots and the tail replay that completes
// them: how recovery rebuilds every sandbox without reading the whole history.
//
// A snapshot of partition p (<dir>/partition-<p>.snapshot, docs/actors.md) holds the state
// of every sandbox of p after the events at offsets below `next_offset`, plus each
// sandbox's event offsets. recover_partition loads it and replays the log from
// `next_offset` to the end, so the result is exactly the fold of the whole partition.
//
// Guarantees:
// - A missing, torn or corrupt snapshot (bad magic, CRC or record) is ignored and the
//   partition is replayed from offset 0: the log is the truth, the snapshot only a cache.
// - Writing is atomic (temporary file, fsync, rename, directory fsync).
// - A gap in a sandbox's sequence in the log is a fault (std::invalid_argument from
//   evolve); a record that does not decode is a fault (std::runtime_error) naming it.
// - Partitions are independent: one can be recovered or snapshotted alone.
#pragma once

#include "actors/state_codec.hpp"
#include "events/event_log.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>

namespace sandboxd::actors {

struct partition_view {
  std::int32_t partition = 0;
  std::int64_t next_offset = 0; // the fold covers offsets [0, next_offset)
  std::unordered_map<std::string, recovered_sandbox> sandboxes;
  std::uint64_t from_snapshot = 0;   // sandboxes loaded from the snapshot
  std::uint64_t events_replayed = 0; // records read from the log
};

// The snapshot of `partition` in `dir`, or an empty view at offset 0 if there is none
// usable.
partition_view load_partition_snapshot(const std::string& dir, std::int32_t partition);

// Applies the log's records of view.partition from view.next_offset to the end.
void replay_tail(events::event_log& log, partition_view& view);

// load_partition_snapshot + replay_tail.
partition_view recover_partition(events::event_log& log, const std::string& dir,
                                 std::int32_t partition);

// Writes `view` as the snapshot of its partition.
void write_partition_snapshot(const std::string& dir, const partition_view& view);

// Brings every partition's snapshot up to the log's current end (one partition in memory
// at a time). Returns the number of records replayed.
std::uint64_t take_snapshots(events::event_log& log, const std::string& dir);

// Applies one decoded event to the view (used by replay and by recovery's own appends).
void apply_event(partition_view& view, const events::event& e, std::int64_t offset);

} // namespace sandboxd::actors
