// projection_status — where each projection stands against the log: per projection and log
// partition, its committed next offset (projection_offsets), the log's end offset and the
// lag, in events and in seconds.
//
// The lag in seconds is the age, at `now`, of the oldest record the projection has not
// applied (the record at its next offset, by its event's occurred_at): how far behind the
// read models' answers are. 0 when the projection is caught up. A partition a projection has
// no offset row for stands at offset 0.
#pragma once

#include "events/event.hpp"
#include "events/event_log.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::projections {

struct partition_status {
  std::string projection;
  std::int32_t partition = 0;
  std::int64_t offset = 0;     // the next offset the projection applies
  std::int64_t end_offset = 0; // of the log, as of the call
  std::int64_t lag_events() const { return end_offset > offset ? end_offset - offset : 0; }
  double lag_seconds = 0;
  bool operator==(const partition_status&) const = default;
};

// Every projection with offsets in `schema` (and `always`, even without any), each with every
// partition of `log`, ordered by projection and partition. Throws on a fault (PostgreSQL, a
// log that cannot be read).
std::vector<partition_status> projection_status(const std::string& conninfo,
                                                const std::string& schema, events::event_log& log,
                                                events::time_point now,
                                                const std::string& always = "read_models");

} // namespace sandboxd::projections
