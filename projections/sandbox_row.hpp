// sandbox_row — the `sandboxes` read model's row logic, as pure functions.
//
// A batch of events changes a sandbox's row in one of two ways: `created` makes the whole
// row; every later event only moves the state, the pause mode, the writable-layer size,
// updated_at and last_seq. fold() gathers one sandbox's events of a batch into one
// sandbox_patch, so the batch writes each sandbox once, without reading it first.
// apply_patch() is the same change to a row in memory (what the tests reason with).
//
// State per event: created → creating; started, resumed → running; pause_requested →
// pausing; paused → paused; resume_requested → resuming; delete_requested → deleting;
// deleted → deleted; failed → failed. The pause mode is set by pause_requested and paused
// and cleared by resumed. storage_sampled, paused and snapshot_taken set the writable-layer
// bytes. `redacted` empties the labels (docs/audit-log.md, "Redaction"). Every event
// (rejections and unknown payloads too) sets updated_at and last_seq.
//
// A warm pool's sandbox (docs/pools.md) has the pool tenant's row until `claim_requested`,
// which gives the row the claiming tenant, the claim's labels and created_at (the claim's
// time: to its tenant the sandbox was made then) and state creating, as a create would;
// `claimed` makes it running.
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::projections {

struct sandbox_row {
  std::string id;
  std::string tenant;
  std::string state;
  std::string template_name;
  std::string runtime; // "runsc", "crun", "hollow": the `created` event's
  events::sandbox_limits limits;
  std::vector<events::label> labels;
  std::string pause_mode; // "" unless pausing, paused or resuming
  std::uint64_t writable_layer_bytes = 0;
  std::int64_t created_at_ns = 0;
  std::int64_t updated_at_ns = 0;
  std::uint64_t last_seq = 0;
  bool operator==(const sandbox_row&) const = default;
};

// What a claim changes of a row.
struct row_claim {
  std::string tenant;
  std::vector<events::label> labels;
  std::int64_t created_at_ns = 0;
};

struct sandbox_patch {
  std::string id;
  std::optional<sandbox_row> created; // the whole row, when `created` is in the batch
  std::optional<row_claim> claim;     // a claim_requested of a row made before the batch
  std::optional<std::string> state;
  std::optional<std::string> pause_mode;
  std::optional<std::uint64_t> writable_layer_bytes;
  bool redacted = false; // the labels go
  std::int64_t updated_at_ns = 0;
  std::uint64_t last_seq = 0;
};

// Adds `e` (an event of patch.id, newer than those folded before) to the patch.
void fold(sandbox_patch& patch, const events::event& e);

// The row after the patch; empty when there is no row and the patch does not create one
// (events of a sandbox whose `created` this projection never saw: nothing to show).
std::optional<sandbox_row> apply_patch(std::optional<sandbox_row> row, const sandbox_patch& patch);

// The `limits` and `labels` columns as JSON text.
std::string limits_json(const events::sandbox_limits& limits);
std::string labels_json(const std::vector<events::label>& labels);

std::int64_t to_ns(events::time_point t);

} // namespace sandboxd::projections
