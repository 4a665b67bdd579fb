// audit_log — the audit read model: the row an event becomes, and verification of the
// stored chains.
//
// One row per event: accepted operations as their event's type ("created", "exec_started",
// …) with outcome "accepted"; rejected commands (`command_rejected`) as the command's kind
// ("exec", "pause_sandbox", …) with the error code as the outcome and its message as the
// detail. verify_audit_log() recomputes every chain (audit_chain.hpp) from the stored rows
// and reports each row that does not fit, by tenant, partition, position and event id.
#pragma once

#include "events/event.hpp"
#include "projections/audit_chain.hpp"

#include <string>
#include <vector>

namespace pqxx {
class transaction_base;
}

namespace sandboxd::projections {

// The row of `e`, read from `partition`, without its position and hashes.
audit_row audit_row_of(const events::event& e, std::int32_t partition);

struct audit_finding {
  std::string tenant;
  std::int32_t partition = 0;
  std::int64_t position = 0; // where the problem shows
  std::string event_id;      // the row's event, "" when the row is missing
  std::string problem;       // "edited", "missing", "out of order", "truncated"
  std::string message;       // names the row and what is wrong with it
};

// Checks every chain of audit_log in the transaction's search_path. Empty when intact.
//   edited:       a row's contents no longer hash to its stored hash.
//   missing:      positions skip a number (rows deleted), or the first row is not 1.
//   out of order: a row's prev_hash is not the previous row's hash (rows swapped, or a row
//                 replaced together with its hash).
//   truncated:    the chain ends before the position and hash of audit_chain_heads.
std::vector<audit_finding> verify_audit_log(pqxx::transaction_base& tx);

} // namespace sandboxd::projections
