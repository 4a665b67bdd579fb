// log_batch — the records a projection reads next: the events after given offsets of some
// partitions, decoded, in log order per partition.
//
// A batch takes at most max_batch records, shared evenly between the partitions it reads
// (each gets max_batch / partitions, at least one), and never reads a partition at or past
// its `until` offset (when it has one). Any run of records after the offsets is a valid
// batch: the reader decides nothing about exactly-once, the transaction that stores the
// offsets does (projector.hpp). A failed read or a record that is not an event is a fault:
// std::runtime_error naming the projection, the log, the partition and the offset, and no
// batch.
#pragma once

#include "events/event_log.hpp"
#include "projections/read_model.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sandboxd::projections {

using partition_offsets = std::map<std::int32_t, std::int64_t>;

struct log_batch {
  partition_offsets from;               // where it was read from
  std::vector<positioned_event> events; // partition after partition, each in log order
  partition_offsets moved;              // the next offsets of the partitions it took records of
};

// Reads the batch after `from` (partition → next offset to read).
log_batch read_log_batch(events::event_log& log, const std::string& projection,
                         const partition_offsets& from, const partition_offsets& until,
                         std::size_t max_batch);

} // namespace sandboxd::projections
