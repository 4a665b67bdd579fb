// state_table.hpp — docs/state-machine.md's state x input table as test data, and the
// names that tie the tests to it: the column a sandbox state falls in, and the input (row)
// a command is in a given state. Both are computed here independently of the machine, so
// the tests compare the machine with the document, not with itself.
#pragma once

#include "actors/sandbox_machine.hpp"

#include <map>
#include <string>
#include <vector>

namespace sandboxd::actors::testing {

// One cell: an error code, "ok", "n/a", or the event names and the next column.
struct cell {
  enum class kind { events, ok, error, not_applicable };
  kind what = kind::not_applicable;
  std::vector<std::string> event_names; // kind::events
  std::string next;                     // kind::events: a column name, or "pausing"
  events::errc code{};                  // kind::error
  std::string text;                     // as written in the document
};

struct state_table {
  std::vector<std::string> columns;
  std::vector<std::string> rows;
  std::map<std::string, std::map<std::string, cell>> cells; // [row][column]

  const cell& at(const std::string& row, const std::string& column) const;
};

// Reads the table between the state-table markers of docs/state-machine.md. Throws
// std::runtime_error when the file or the table cannot be read.
state_table load_state_table();

// "absent", "creating", "running", "pausing_fs", "pausing_mem", "paused_fs", "paused_mem",
// "resuming", "deleting", "deleted", "failed".
std::string column_of(const sandbox_state& s);

// Whether a cell's next-state name admits the state `s` ("pausing" admits either mode).
bool next_matches(const std::string& next, const sandbox_state& s);

// The row of the table that `c` is when it reaches `s` at `now` (see the document's
// "Inputs" section), decided from the state's fields with the rules written there.
std::string input_of(const sandbox_state& s, const command_body& c, time_point now);

// Why `d` (the machine's answer, with the state it led to) disagrees with `expected`;
// empty when it agrees.
std::string mismatch(const cell& expected, const decision& d, const sandbox_state& after);

} // namespace sandboxd::actors::testing
