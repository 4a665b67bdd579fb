// rebuild — projects the log from offset zero into a fresh schema and compares the result
// with the live read models, row by row.
//
// The rebuild stops every partition at the offset the live projection has committed, so
// both sides saw the same prefix of the log. Every table of the read models is compared
// as a multiset of whole rows (EXCEPT ALL, both ways): a row that differs in any column
// shows as one row only in live and one only in the rebuild.
#pragma once

#include "events/event_log.hpp"

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
};

// The read-model tables a rebuild compares, in migration order.
const std::vector<std::string>& read_model_tables();

// Drops and recreates `fresh_schema`, projects `log` into it up to the offsets of
// projection `name` in `live_schema`, and compares the two.
rebuild_report rebuild_and_compare(events::event_log& log, const std::string& conninfo,
                                   const std::string& live_schema, const std::string& fresh_schema,
                                   const std::string& name = "read_models");

// Compares the read-model tables of two schemas on one server.
rebuild_report compare_schemas(const std::string& conninfo, const std::string& live_schema,
                               const std::string& fresh_schema);

} // namespace sandboxd::projections
