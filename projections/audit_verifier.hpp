// audit_verifier — what is wrong with one stored audit chain, as a pure function.
//
// verify_chain() takes a chain's rows as stored (ordered by position) and the head the
// projection recorded for it (audit_chain_heads, written in the transaction of the rows, kept
// outside them), and reports every way they differ from a chain the projection wrote, each as
// its own problem type:
//
//   hash_mismatch   a row's contents do not hash to its stored hash: edited in place.
//   broken_link     a row hashes right, but the row after it (or the chain head, for the
//                   last row) was chained to another row at its place: the row was replaced
//                   together with a recomputed hash.
//   out_of_order    an authentic row stored at another position than the one its link gives
//                   it: rows swapped or moved. Reported at the stored position, with the
//                   position it belongs at.
//   missing_row     positions skip: rows deleted from inside the chain or from its start.
//   truncated_tail  the chain ends before the position of its head: rows deleted from its end.
//   beyond_head     rows after the head's position, or rows and no head: rows added outside
//                   the projection, or the head deleted.
//   bad_redaction   a row marked redacted that no redaction explains: its sandbox has no
//                   accepted `redacted` row after it, its action holds no private detail
//                   (audit_log.hpp), or its detail is not empty; or a version 1 row
//                   redacted, whose hash needs the text it no longer has.
//
// An intact chain has no finding and any change to the rows or the head gives at least one.
// A chain that fails the plain check (positions 1, 2, 3, … each linked to the one before
// and hashing right) is analysed by following its links instead of its positions: from the
// genesis hash, the next row is the one whose prev_hash is the current hash, placed at the
// next position. Every row reached hashes right at the place its link gives it unless its
// contents changed; where no row continues the walk, the first row not reached yet says why
// (positions absent before it: missing_row; otherwise the row before it is not the one it was
// chained to: broken_link) and the walk goes on from it. Someone who rewrites the rows and
// the head consistently is not seen here; rebuild_and_compare (rebuild.hpp), which derives
// both from the log again, sees it.
#pragma once

#include "projections/audit_chain.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::projections {

enum class audit_problem {
  hash_mismatch,
  broken_link,
  out_of_order,
  missing_row,
  truncated_tail,
  beyond_head,
  bad_redaction,
};
std::string_view to_string(audit_problem p);

struct audit_finding {
  std::string tenant;
  std::int32_t partition = 0;
  std::int64_t position = 0; // the stored position of the row, or the first missing one
  std::string event_id;      // the row's event, "" when the row is missing
  audit_problem problem = audit_problem::hash_mismatch;
  std::string message; // names the row and what is wrong with it
};

// The position and hash of a chain's last row, as the projection recorded them.
struct recorded_head {
  std::int64_t position = 0;
  std::string hash;
};

// The findings of the chain (tenant, partition): `rows` ordered by position (each position
// once, as the primary key keeps them), `head` empty when the chain has none. Ordered by
// position.
std::vector<audit_finding> verify_chain(const std::string& tenant, std::int32_t partition,
                                        const std::vector<audit_row>& rows,
                                        const std::optional<recorded_head>& head);

} // namespace sandboxd::projections
