// rebuild — projects the log from offset zero into a fresh schema and compares the result
// with the live read models, row by row (rebuild_and_compare), or replaces the live rows by
// it while the projection keeps running (rebuild_and_replace, below).
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

struct replace_report {
  std::size_t rows_replaced = 0; // rows the live read-model tables hold after the switch
  // The live projection's next offsets at the switch: the rebuilt rows are the log up to
  // them, and the live projector continues from them.
  std::map<std::int32_t, std::int64_t> offsets;
  int catch_up_rounds = 0; // passes of the scratch projection before the switch
};

// Rebuilds projection `name` from offset zero into `scratch_schema` while the live read
// models keep serving and their projector keeps applying, then replaces the live rows with
// the rebuilt ones in one transaction:
// - Outside any lock, a projector fills the scratch schema up to the live projection's
//   offsets, and again up to the new ones while more than k_switch_within records were
//   applied live meanwhile (at most k_max_catch_up_rounds passes).
// - The switch transaction locks the live offset rows (FOR UPDATE, as a projector step
//   does: the live projector waits for it, and resumes from the same offsets after it),
//   applies the records between the scratch and the live offsets to the scratch schema,
//   deletes every live read-model row, copies the rebuilt rows in, drops the scratch schema
//   and commits. Readers see the old rows or the new ones, never a mix (MVCC).
// The live offsets do not move, so the projector's memory of its own rows stays valid: the
// rebuild writes, row for row, what the projector would have written from the same events.
// Throws on a fault; nothing of the live read models changed then.
inline constexpr std::size_t k_switch_within = 10000;
inline constexpr int k_max_catch_up_rounds = 5;
replace_report rebuild_and_replace(events::event_log& log, const std::string& conninfo,
                                   const std::string& live_schema,
                                   const std::string& scratch_schema,
                                   const std::string& name = "read_models");

// Compares the read-model tables of two schemas on one server, in one snapshot.
rebuild_report compare_schemas(const std::string& conninfo, const std::string& live_schema,
                               const std::string& fresh_schema);

} // namespace sandboxd::projections
