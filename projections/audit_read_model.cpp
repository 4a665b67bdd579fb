#include "projections/audit_read_model.hpp"

#include "base/sha256.hpp"
#include "projections/audit_log.hpp"
#include "projections/pg_array.hpp"
#include "projections/pg_copy.hpp"

#include <pqxx/pqxx>

namespace sandboxd::projections {

void audit_read_model::forget() {
  heads_.clear();
  rows_.clear();
  redactions_.clear();
}

void audit_read_model::recall(pqxx::transaction_base& tx, const fresh_batch& batch) {
  pg_array k_tenant, k_partition;
  for (const auto* pe : batch.all)
    if (heads_.try_emplace({pe->event.tenant, pe->partition}, chain_head{0, audit_genesis_hash()})
          .second) {
      k_tenant.add(pe->event.tenant);
      k_partition.add(pe->partition);
    }
  if (k_tenant.size() == 0)
    return;
  for (const auto& f :
       tx.exec_params("SELECT h.tenant, h.partition, h.position, encode(h.hash, 'hex')"
                      " FROM audit_chain_heads h"
                      " JOIN unnest($1::text[], $2::integer[]) AS k(tenant, partition)"
                      "  ON h.tenant = k.tenant AND h.partition = k.partition",
                      k_tenant.str(), k_partition.str()))
    heads_[{f[0].as<std::string>(), f[1].as<std::int32_t>()}] = {f[2].as<std::int64_t>(),
                                                                 f[3].as<std::string>()};
}

void audit_read_model::compute(const fresh_batch& batch) {
  rows_.clear();
  redactions_.clear();
  for (const auto* pe : batch.all) {
    if (std::holds_alternative<events::redacted>(pe->event.body))
      redactions_.push_back({pe->event.tenant, pe->partition, pe->event.sandbox_id});
    auto row = audit_row_of(pe->event, pe->partition);
    chain_key key{row.tenant, row.partition};
    auto& h = heads_.at(key);
    auto& c = rows_[std::move(key)];
    row.position = ++h.position;
    link(row, h.hash);
    h.hash = row.hash;
    copy_field(c, row.tenant);
    copy_field(c, row.partition);
    copy_field(c, row.position);
    copy_field(c, row.event_id);
    copy_field(c, row.occurred_at_ns);
    copy_field(c, row.principal);
    copy_field(c, row.action);
    copy_field(c, row.sandbox_id);
    copy_field(c, row.outcome);
    copy_field(c, row.detail);
    copy_hex_bytea(c, row.prev_hash);
    copy_hex_bytea(c, row.hash);
    copy_end_row(c);
  }
}

// Each row's detail gives way to its SHA-256, which the chain hashes (audit_chain.hpp), so the
// chain verifies as before. Version 1 rows hashed the text: they are emptied as well (privacy
// first) and verification reports them (docs/audit-log.md).
void audit_read_model::redact(pqxx::transaction_base& tx, const redaction& r) {
  pg_array actions;
  for (const auto& a : private_detail_actions())
    actions.add(a);
  pg_array positions, digests;
  for (const auto& f : tx.exec_params("SELECT position, detail FROM audit_log"
                                      " WHERE tenant = $1 AND partition = $2 AND sandbox_id = $3"
                                      "  AND NOT redacted AND action = ANY($4::text[])",
                                      r.tenant, r.partition, r.sandbox_id, actions.str())) {
    positions.add(f[0].as<std::int64_t>());
    digests.add(sha256_hex(f[1].as<std::string>()));
  }
  if (positions.size() == 0)
    return;
  tx.exec_params("UPDATE audit_log a SET detail = '', redacted = true,"
                 " detail_sha256 = decode(u.digest, 'hex')"
                 " FROM unnest($3::bigint[], $4::text[]) AS u(position, digest)"
                 " WHERE a.tenant = $1 AND a.partition = $2 AND a.position = u.position",
                 r.tenant, r.partition, positions.str(), digests.str());
}

void audit_read_model::write(pqxx::transaction_base& tx) {
  if (rows_.empty())
    return;
  std::string copy;
  for (const auto& [key, chain] : rows_)
    copy += chain;
  copy_rows(tx, "audit_log",
            {"tenant", "partition", "position", "event_id", "occurred_at_ns", "principal", "action",
             "sandbox_id", "outcome", "detail", "prev_hash", "hash"},
            std::move(copy));
  pg_array h_tenant, h_partition, h_position, h_hash;
  for (const auto& [key, chain] : rows_) {
    const auto& h = heads_.at(key);
    h_tenant.add(key.first);
    h_partition.add(key.second);
    h_position.add(h.position);
    h_hash.add(h.hash);
  }
  tx.exec_params(
    "INSERT INTO audit_chain_heads (tenant, partition, position, hash)"
    " SELECT t, p, n, decode(h, 'hex')"
    " FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::text[]) AS u(t, p, n, h)"
    " ON CONFLICT (tenant, partition) DO UPDATE SET position = EXCLUDED.position,"
    "  hash = EXCLUDED.hash",
    h_tenant.str(), h_partition.str(), h_position.str(), h_hash.str());
  rows_.clear();
  for (const auto& r : redactions_)
    redact(tx, r);
  redactions_.clear();
}

} // namespace sandboxd::projections
