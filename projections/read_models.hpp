// read_models — applies a batch of events to the three read models (sandboxes, billing
// meters, audit log) inside the caller's transaction.
//
// The caller (projector) owns the transaction and the offsets; this only writes rows. With
// the transaction it guarantees: every event of the batch whose sequence number is above
// the highest one this projection applied for its sandbox changes the read models exactly
// once; the others (duplicates) change nothing. Sequences are dense, as the actors write
// them: an event more than one above the last applied (a gap: the log lost events) is a
// fault, sequence_gap, thrown before anything of the batch is written, so the caller's
// rollback keeps nothing of it. Events must come in log order per partition. The statements
// are set-based (unnest arrays, COPY), a handful per batch.
//
// `memory` (projection_memory.hpp) supplies what it has entries for — the caller vouches
// that they are current — and the rest is read; on return it holds the batch's sandboxes
// and chains as the batch left them (as PostgreSQL will once the transaction commits). If
// this throws, `memory` is no longer current. The overload without it reads everything.
//
// Two helpers compute the audit chain and the billing rows while PostgreSQL runs the
// other statements; a caller applying batch after batch passes its own (batch_helpers),
// started once, and the overloads without them start a pair for the call.
#pragma once

#include "events/event.hpp"
#include "projections/projection_memory.hpp"
#include "projections/task_thread.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pqxx {
class transaction_base;
}

namespace sandboxd::projections {

struct positioned_event {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  events::event event;
};

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

struct batch_outcome {
  std::size_t applied = 0;
  std::size_t duplicates = 0;
};

// The threads a batch's audit hashing and billing rows run on.
struct batch_helpers {
  task_thread audit;
  task_thread billing;
};

batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch, projection_memory& memory,
                          batch_helpers& helpers);
batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch, projection_memory& memory);
batch_outcome apply_batch(pqxx::transaction_base& tx, const std::string& projection,
                          const std::vector<positioned_event>& batch);

} // namespace sandboxd::projections
