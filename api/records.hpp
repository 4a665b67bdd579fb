// records.hpp — the values the read-model calls answer (list, bill, audit), as the server
// reads them from PostgreSQL (read_store.hpp) and as the C++ client returns them
// (client.hpp); and the values of the exec and file calls as the C++ client returns them.
// Times are nanoseconds since the Unix epoch, amounts micro-dollars.
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::api {

struct list_filter {
  std::vector<std::string> states;   // empty: every state but deleted (unless include_deleted)
  std::vector<events::label> labels; // all must match
  bool include_deleted = false;
  std::string page_token;    // "" for the first page
  std::uint32_t limit = 100; // 0: 100; at most 1000
};

struct sandbox_summary {
  std::string id;
  std::string state;
  std::string template_name;
  std::string runtime; // "" for a row projected before migration 0009 (until a rebuild)
  events::sandbox_limits limits;
  std::vector<events::label> labels;
  std::string pause_mode;
  std::uint64_t writable_bytes = 0;
  std::int64_t created_at_ns = 0; // microsecond precision (PostgreSQL's timestamptz)
  std::int64_t updated_at_ns = 0;
  std::uint64_t sequence = 0;
};

struct list_page {
  std::vector<sandbox_summary> rows;
  std::string next_page_token; // "" at the end
};

enum class bill_grouping { sandbox, hour, day };

struct bill_line {
  std::string tenant;
  std::string sandbox_id; // "" when grouped by time
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0;
  double compute_gib_seconds = 0;
  double storage_gib_seconds = 0;
  std::int64_t compute_micros = 0;
  std::int64_t storage_micros = 0;
  std::vector<std::string> event_ids;
};

struct bill_report {
  std::vector<bill_line> lines;
  std::int64_t total_compute_micros = 0;
  std::int64_t total_storage_micros = 0;
  std::int64_t total_micros = 0;
};

struct audit_query {
  std::string tenant;
  std::string sandbox_id;
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0; // 0: no bound
  std::string page_token;
  std::uint32_t limit = 100;
};

struct audit_entry {
  std::string tenant;
  std::int32_t partition = 0;
  std::int64_t position = 0;
  std::string event_id;
  std::string sandbox_id;
  std::int64_t occurred_at_ns = 0;
  std::string principal;
  std::string action;
  std::string outcome;
  std::string detail;
  std::string hash;      // 32 bytes
  bool redacted = false; // the detail was removed by a redaction
};

struct audit_page {
  std::vector<audit_entry> rows;
  std::string next_page_token;
};

struct audit_problem {
  std::string tenant;
  std::int32_t partition = 0;
  std::int64_t position = 0;
  std::string event_id;
  std::string kind;
  std::string message;
};

struct audit_check {
  std::uint64_t checked_rows = 0;
  std::vector<audit_problem> problems;
};

// --- exec and files (schemas/api.capnp: ExecResult, ExecInfo, FileInfo, DirEntry) ---------

struct exec_result {
  std::string exec_id;
  std::int32_t exit_code = 0; // -1 when ended by a signal
  std::int32_t signal = 0;    // 0 when it exited
  bool timed_out = false;
  bool oom_killed = false;
  bool output_truncated = false;
  bool interrupted = false; // the daemon restarted while it ran: its outcome is unknown
  std::int64_t duration_ns = 0;
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
};

struct exec_info {
  std::string exec_id;
  std::vector<std::string> argv;
  std::int64_t started_at_ns = 0;
};

enum class file_type { regular, directory, symlink, other };

struct file_info {
  std::string path;
  file_type type = file_type::regular;
  std::uint64_t size = 0;
  std::uint32_t mode = 0; // permission bits
  std::int64_t mtime_ns = 0;
};

// A file as read or written, with the SHA-256 (32 bytes) of its content.
struct file_digest {
  file_info info;
  std::string sha256;
};

struct dir_entry {
  std::string name;
  file_info info;
};

struct dir_listing {
  std::vector<dir_entry> entries;
  bool truncated = false; // more entries than the limit
};

// --- projections (schemas/api.capnp: Admin.verifyProjection) --------------------------------

// A row only one side has: "live" (the read model holds it, a rebuild would not) or
// "rebuild" (a rebuild makes it, the read model lacks it). `events`: the ids of the events
// of the row's sandbox that the comparison covered, in log order (empty for rows of no
// sandbox).
struct projection_difference {
  std::string table;
  std::string side;
  std::string row; // JSON, every column
  std::vector<std::string> events;
};

struct projection_check {
  std::string name;
  std::uint64_t rows_compared = 0;
  std::vector<projection_difference> differences;             // empty: the read models are exact
  std::vector<std::pair<std::int32_t, std::int64_t>> offsets; // compared at, per partition
};

// Admin.projectionStatus: one projection's position in one log partition.
struct projection_partition {
  std::string projection;
  std::int32_t partition = 0;
  std::int64_t offset = 0;     // the next offset it applies
  std::int64_t end_offset = 0; // of the log
  std::int64_t lag_events = 0;
  double lag_seconds = 0; // age of the oldest record not applied yet; 0 when caught up
};

// Admin.rebuildProjection: the live read models replaced by a rebuild from the log.
struct projection_rebuild {
  std::string name;
  std::uint64_t rows_replaced = 0;
  std::vector<std::pair<std::int32_t, std::int64_t>>
    offsets; // of the live projection at the switch
};

// Admin.checkDeterminism: a field whose value the actor holds differently from the replay.
struct state_difference {
  std::string sandbox_id;
  std::string field;
  std::string live;     // "" when the actor's state leaves the field out
  std::string replayed; // "" when the replayed state leaves it out
};

struct determinism_check {
  std::uint64_t checked = 0; // sandboxes compared
  std::vector<state_difference> differences;
};

// A template as Templates.get answers it (docs/templates.md). Digests in hex.
struct template_layer_info {
  std::string sha256;
  std::uint64_t bytes = 0;
};

// A snapshot of a sandbox's writable layer (docs/snapshots.md).
struct snapshot_info {
  std::string id; // snap-<16 hex digits>
  std::string name;
  std::string sandbox_id; // the sandbox it was taken of
  std::int64_t taken_at_ns = 0;
  std::string template_name;
  std::string runtime;
  std::uint64_t layer_bytes = 0; // the sandbox's writable layer when it was taken
  std::uint64_t referenced_bytes = 0;
  std::uint64_t exclusive_bytes = 0;
  std::uint64_t sequence = 0; // of its snapshot_taken
};

struct template_info {
  std::string id; // "" for a stock template not built yet
  std::string name;
  std::string scope;  // "global" | "tenant"
  std::string tenant; // tenant scope: the owner
  std::string status; // "stock" (not built yet), "building", "ready", "failed"
  std::string source; // "stock" | "import" | "spec"
  std::string description;
  std::string digest;                      // ready: the template digest
  std::vector<template_layer_info> layers; // lowest first
  std::vector<events::env_var> env;
  std::string working_directory;
  std::string user;
  std::vector<std::string> command;
  std::uint64_t total_bytes = 0;
  std::string failure;
  std::int64_t created_at_ns = 0;
  std::int64_t settled_at_ns = 0;
  std::vector<std::string> used_by;
};

} // namespace sandboxd::api
