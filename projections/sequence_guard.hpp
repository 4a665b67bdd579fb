// sequence_guard — which events of a batch are fresh: the duplicate and gap check every read
// model relies on, and where each sandbox's last applied sequence is kept.
//
// An event whose sequence is at or below the last this projection applied for its sandbox is
// a duplicate (a retried append, the same events appended twice) and is dropped. Sequences
// are dense, as the actors write them: an event more than one above the last applied (the
// log lost events) is a fault, sequence_gap, thrown by admit() before anything of the batch is
// written, so the caller's rollback keeps nothing of it.
//
// Where the last applied sequence lives: a sandbox's `sandboxes` row carries it (last_seq,
// moved by every applied event, so the guard costs no write of its own); for a sandbox whose
// row does not carry it — no row (its first event was not `created`), or a second `created`
// the row ignores — projection_sandbox_seq(projection, sandbox_id, last_seq) does. The guard
// is the greater of the two. It remembers, per sandbox, the last applied sequence and which
// of those rows exist, as the projector's read models remember their rows (read_model.hpp).
#pragma once

#include "projections/read_model.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace sandboxd::projections {

// The fault of a batch holding an event of `sandbox_id` at sequence `found` (at `partition`,
// `offset`) while the last applied is `first_missing` - 1: sequences first_missing to
// found - 1 are not in the log before it. The message names the sandbox and the missing
// sequences.
struct sequence_gap : std::runtime_error {
  sequence_gap(const std::string& projection, const positioned_event& at,
               std::uint64_t last_applied);
  std::string sandbox_id;
  std::uint64_t first_missing = 0;
  std::uint64_t found = 0;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

class sequence_guard {
public:
  explicit sequence_guard(std::string projection) : projection_(std::move(projection)) {}

  // Its table (a rebuild compares it).
  static const std::string& table();

  // Reads the last applied sequence of the batch's sandboxes it does not remember.
  void recall(pqxx::transaction_base& tx, const std::vector<positioned_event>& batch);

  // The batch's fresh events, the last applied sequences moved past them; adds the dropped
  // duplicates to `duplicates`. Throws sequence_gap. Events must come in log order per
  // partition (every sandbox's events are in one partition).
  fresh_batch admit(const std::vector<positioned_event>& batch, std::size_t& duplicates);

  // Writes the projection_sandbox_seq rows of the batch's sandboxes whose `sandboxes` row
  // does not carry their guard after it, and drops those a row now carries.
  void write(pqxx::transaction_base& tx, const fresh_batch& batch);

  void forget() { sandboxes_.clear(); }
  std::size_t remembered() const { return sandboxes_.size(); }

private:
  struct entry {
    std::uint64_t last_seq = 0; // 0: none applied
    bool has_row = false;       // a `sandboxes` row exists
    bool has_guard_row = false; // a projection_sandbox_seq row exists
  };
  std::string projection_;
  std::unordered_map<std::string, entry> sandboxes_;
};

} // namespace sandboxd::projections
