// timeline — one sandbox's history laid out for the console's timeline page, as a pure
// function of the replay fold (replay/replay_fold.hpp): the states come from the state the
// fold holds after each event, never from a second reading of the events, so the bands say
// exactly what `sandboxctl replay` says.
//
// - Bands: the runs of equal (status, pause mode) in the states after each event, on the
//   time axis from the event that entered the status to the event that left it; the last
//   band ends at the last event and is `open` unless the sandbox is deleted.
// - Spans: an exec from its exec_started to its exec_finished (matched by exec id), a file
//   change from its file_op_requested to its file_op_finished (matched by operation id),
//   with the outcome; one without its end is `open` (still running, or its end not yet in
//   the log). Spans that overlap in time get different rows, so none hides another.
// - Lanes: each event's lane on the page: lifecycle (created, started, pauses, resumes,
//   deletes, failures, timeouts), exec (exec_started, exec_finished, kills), file (reads,
//   writes, file operations), rejected (command_rejected), other (storage samples,
//   snapshots, redaction, payloads of a newer version).
#pragma once

#include "replay/replay_fold.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::console {

struct state_band {
  std::string status;     // "creating", "running", "paused", ...
  std::string pause_mode; // "filesystem" | "memory" while pausing, paused, resuming; else ""
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0;
  std::uint64_t from_seq = 0; // the event that entered it
  std::uint64_t to_seq = 0;   // the event that left it; 0 when open
  bool open = false;
  bool operator==(const state_band&) const = default;
};

struct span {
  std::string lane; // "exec" | "file"
  std::string id;   // exec id or file operation id
  std::string label;
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0; // the end event's time; the last event's when open
  std::uint64_t from_seq = 0;
  std::uint64_t to_seq = 0;
  bool open = false;
  std::string outcome; // "exit 0", "exit 3", "signal 9", "timed out", "interrupted", "failed: …"
  bool ok = false;     // exit 0, or a file change completed
  int row = 0;         // 0, 1, ...: overlapping spans of one lane are on different rows
  bool operator==(const span&) const = default;
};

struct timeline {
  std::vector<std::string> lanes; // of each step, in step order
  std::vector<state_band> bands;
  std::vector<span> spans;
  int exec_rows = 0;
  int file_rows = 0;
};

timeline make_timeline(const std::vector<replay::replay_step>& steps);

// The lane of one payload.
std::string lane_of(const events::payload& p);

} // namespace sandboxd::console
