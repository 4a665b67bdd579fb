// sandbox_history.hpp — one sandbox's events, read from the event log itself (never a read
// model): the records of its partition whose key is its id, decoded, in offset order.
//
// Guarantees:
// - Every record of the sandbox up to the partition's end (as of the call) is returned, in
//   the order the log holds them, with its partition and offset.
// - A record of the sandbox that does not decode is a fault: std::runtime_error naming the
//   log, partition and offset (the log checks its bytes; such a record was written broken).
// - No records: an empty history (the caller says "no such sandbox in this log").
// - From a file_log_reader the records are decoded in place, without copying them.
#pragma once

#include "events/event.hpp"
#include "events/event_log.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace sandboxd::replay {

struct history_entry {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  events::event event;
};

std::vector<history_entry> read_history(events::event_log& log, std::string_view sandbox_id);

} // namespace sandboxd::replay
