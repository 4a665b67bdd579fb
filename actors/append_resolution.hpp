// append_resolution.hpp — which events of an append whose fate is unknown are in the log.
//
// An append that failed with `maybe_stored` (a Kafka delivery timeout, a file log that could
// not undo a failed fsync) may have stored some or all of its records, now or later. The
// sandbox actor never guesses: it reads its partition back with find_landed, applies the
// events it finds and appends the missing ones again, identical (same event ids, same
// sequence numbers), until the log holds all of them (docs/actors.md, "An append whose fate
// is unknown"). A second copy of an event is harmless: every reader keeps the first record
// of a sequence number and drops later ones as duplicates, and the copies are equal.
//
// Guarantees of find_landed:
// - It reads `partition` from `from` to its end and returns the offsets of the first copy
//   of expected[0], expected[1], ... in order, as far as they are found without a gap.
// - A record of `sandbox_id` that is neither one of `expected` (in order) nor a copy of an
//   event already applied or found is a fault: another writer wrote this sandbox's
//   sequence numbers. It throws std::runtime_error naming the partition, offset and event
//   (the actor then refuses every command for the sandbox: its history is in doubt).
// - The log unreadable (brokers down) is `failure`, not a fault: try again later.
// Blocking (it reads the log): run it off CAF's threads.
#pragma once

#include "events/event.hpp"
#include "events/event_log.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::actors {

struct landed_events {
  std::vector<std::int64_t> offsets; // of expected[0 .. offsets.size()), first copies
  std::optional<events::error> failure;
};

// What a read-back found, or the fault (another writer) that stopped it.
struct landed_result {
  landed_events landed;
  std::optional<std::string> fault;
};

// `applied_sequence`: the sequence of the sandbox's last event applied before `expected`;
// expected[i] carries sequence applied_sequence + 1 + i.
landed_events find_landed(events::event_log& log, std::int32_t partition, std::int64_t from,
                          const std::string& sandbox_id, std::uint64_t applied_sequence,
                          const std::vector<events::event>& expected);

} // namespace sandboxd::actors
