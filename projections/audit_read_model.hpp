// audit_read_model — the audit log's tables (docs/audit-log.md): audit_log, one row per event
// hash-chained per tenant and partition (audit_chain.hpp), and audit_chain_heads, each
// chain's last position and hash.
//
// A batch's rows are chained on from each chain's head in event order (hashing is its
// compute(), which runs while PostgreSQL executes the other models' statements), sent by COPY
// chain after chain (so that inserts reach the primary key (tenant, partition, position) in
// its order, each next to the one before, on a page still in cache), and the heads moved in
// the same transaction. It remembers each chain's head as the batch leaves it; a chain it has
// no head for is read from audit_chain_heads (none: no row yet). A `redacted` event empties
// the private details of its sandbox's rows (audit_log.hpp) after the batch's rows are in, so
// that rows of the same batch are redacted too.
#pragma once

#include "projections/read_model.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::projections {

class audit_read_model : public read_model {
public:
  std::vector<std::string> tables() const override { return {"audit_log", "audit_chain_heads"}; }
  void recall(pqxx::transaction_base& tx, const fresh_batch& batch) override;
  void compute(const fresh_batch& batch) override;
  void write(pqxx::transaction_base& tx) override;
  void forget() override;

private:
  using chain_key = std::pair<std::string, std::int32_t>; // tenant, partition
  struct chain_head {
    std::int64_t position = 0; // 0: the chain has no row yet
    std::string hash;
  };
  std::map<chain_key, chain_head> heads_;
  std::map<chain_key, std::string> rows_; // COPY text rows per chain the batch extends
  struct redaction {
    std::string tenant;
    std::int32_t partition = 0;
    std::string sandbox_id;
  };
  std::vector<redaction> redactions_; // the batch's, in event order

  void redact(pqxx::transaction_base& tx, const redaction& r);
};

} // namespace sandboxd::projections
