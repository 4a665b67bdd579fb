// audit_chain — the hash chain of the audit log, as pure functions.
//
// Every audit row belongs to one chain: its tenant and the log partition its event came
// from. (A chain per partition keeps the order of a chain the order of its partition, so a
// rebuild from offset zero produces the same chain byte for byte, and projectors that own
// different partitions never contend for one chain head.) Rows of a chain are numbered
// 1, 2, 3, … and
//   hash(row n) = SHA-256(hash(row n-1) ‖ canonical_row(row n)),  hash(row 0) = 64 × '0'
// where hashes are 64 lowercase hex digits. The canonical row is a versioned, length-prefixed
// encoding of every column except the hashes, so no two different rows share one.
//
// Version 2 (every row written since redaction exists) encodes the detail by its SHA-256,
// not its text: a redaction (docs/audit-log.md) empties a row's detail and keeps that digest
// (`detail_sha256`), and the chain still verifies. Version 1 rows (written before) encode
// the text itself; they verify as before, and cannot be redacted without breaking the chain
// (`sandboxctl projections rebuild read_models` rewrites them as version 2 from the log).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::projections {

struct audit_row {
  std::string tenant;
  int32_t partition = 0;
  int64_t position = 0;       // 1-based place in the chain
  std::string event_id;       // the event behind the row
  int64_t occurred_at_ns = 0; // event time
  std::string principal;      // who asked
  std::string action;         // what was asked ("create", "exec", "pause", …)
  std::string sandbox_id;     // empty when the command named no sandbox
  std::string outcome;        // "accepted", or the rejecting errc's name
  std::string detail;         // what happened, or why it was rejected
  int hash_version = 2;       // of canonical_row: 1 for rows written before version 2
  bool redacted = false;      // detail emptied by a redaction; detail_sha256 keeps its digest
  std::string detail_sha256;  // hex; set only when redacted
  std::string prev_hash;
  std::string hash;
  bool operator==(const audit_row&) const = default;
};

// The chain hash before the first row.
const std::string& audit_genesis_hash();

// The canonical encoding of the row's contents (every field but prev_hash and hash), in the
// row's hash_version.
std::string canonical_row(const audit_row& row);

// The SHA-256 (hex) version 2 hashes for the detail: detail_sha256 when redacted, else that
// of the detail.
std::string detail_digest(const audit_row& row);

// SHA-256 of prev_hash followed by the canonical row, as hex.
std::string chain_hash(const std::string& prev_hash, const audit_row& row);

// Whether rows with this action may hold the tenant's own data in their detail (exec and file
// operations, kills, rejected creates and operations): what a redaction empties.
bool has_private_detail(std::string_view action);
const std::vector<std::string>& private_detail_actions();

// Sets row.prev_hash and row.hash as the row that follows `prev_hash`.
void link(audit_row& row, const std::string& prev_hash);

} // namespace sandboxd::projections
