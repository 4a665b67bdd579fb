// rebuild — projects the log from offset zero into a fresh schema and compares the result
// with the live read models, row by row.
//
// Both sides cover the same prefix of the log, in one snapshot: the comparison runs in one
// REPEATABLE READ transaction whose first statement reads the live projection's committed
// offsets. The same transaction projects the log from offset zero up to those offsets into
// the fresh schema (whose tables are made, by the migrations, just before it) and then
// compares. A projector committing meanwhile moves the live rows and offsets together in one
// transaction (projector.hpp), which this snapshot sees either wholly or not at all: a
// running projection never shows as a difference. Every table of the read models is compared
// as a multiset of whole rows (EXCEPT ALL, both ways): a row that differs in any column shows
// as one row only in live and one only in the rebuild.
//
// The transaction holds its snapshot while it replays the log, so on a large log PostgreSQL
// keeps the dead rows of that time (vacuum waits) until it ends: a verification run, not
// something to run continuously.
#pragma once

#include "events/event_log.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sandboxd::projections {

struct row_difference {
  std::string table;
  std::string side; // "live" or "rebuild": where the row is and the other side lacks it
  std::string row;  // the row as JSON
};

struct rebuild_report {
  std::vector<row_difference> differences; // empty: the live read models are exact
  std::size_t rows_compared = 0;           // rows of the live tables
  // The live projection's next offsets both sides were compared at (every partition of the
  // log; 0 where the live projection has not started).
  std::map<std::int32_t, std::int64_t> offsets;
};

// The read-model tables a rebuild compares, in migration order.
const std::vector<std::string>& read_model_tables();

// Drops and recreates `fresh_schema`, projects `log` into it up to the offsets of
// projection `name` in `live_schema`, and compares the two, all in one snapshot (above).
// Throws on a fault (PostgreSQL, the log, a log that ends before the live offsets, a
// sequence_gap); the fresh schema is then left with its tables empty.
rebuild_report rebuild_and_compare(events::event_log& log, const std::string& conninfo,
                                   const std::string& live_schema, const std::string& fresh_schema,
                                   const std::string& name = "read_models");

// Compares the read-model tables of two schemas on one server, in one snapshot.
rebuild_report compare_schemas(const std::string& conninfo, const std::string& live_schema,
                               const std::string& fresh_schema);

} // namespace sandboxd::projections
