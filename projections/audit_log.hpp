// audit_log — the audit read model: the row an event becomes, and verification of the
// stored chains.
//
// One row per event: accepted operations as their event's type ("created", "exec_started",
// …) with outcome "accepted"; rejected commands (`command_rejected`) as the command's kind
// ("exec", "pause_sandbox", …) with the error code as the outcome and its message as the
// detail. A payload of a newer version (`unknown`) is recorded by its envelope (who, when,
// which sandbox), with action and outcome "unknown" and its payload ordinal as the detail:
// the log holds an event, so the audit log has its row. verify_audit_log() recomputes every
// chain (audit_chain.hpp) from the stored rows and reports each problem (audit_verifier.hpp)
// by tenant, partition, position and event id.
//
// Redaction (docs/audit-log.md): a `redacted` event empties the detail of every row of its
// sandbox whose action may name the tenant's own data (has_private_detail: command lines,
// paths, operation messages), keeping each detail's SHA-256 so that the chain verifies.
#pragma once

#include "events/event.hpp"
#include "projections/audit_chain.hpp"
#include "projections/audit_verifier.hpp"

#include <string>
#include <vector>

namespace pqxx {
class transaction_base;
}

namespace sandboxd::projections {

// The row of `e`, read from `partition`, without its position and hashes.
audit_row audit_row_of(const events::event& e, std::int32_t partition);

// Checks every chain of audit_log in the transaction's search_path against its rows and its
// head in audit_chain_heads (verify_chain, audit_verifier.hpp, has the problem types).
// Empty when intact; ordered by tenant, partition and position. The transaction must read
// one snapshot (REPEATABLE READ or stricter) while the projector may be writing: heads and
// rows read at different moments do not match.
std::vector<audit_finding> verify_audit_log(pqxx::transaction_base& tx);

} // namespace sandboxd::projections
