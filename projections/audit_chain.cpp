#include "projections/audit_chain.hpp"

#include "base/sha256.hpp"

namespace sandboxd::projections {

namespace {

void field(std::string& out, const std::string& v) {
  out += std::to_string(v.size());
  out += ':';
  out += v;
  out += '\n';
}

} // namespace

const std::string& audit_genesis_hash() {
  static const std::string genesis(64, '0');
  return genesis;
}

std::string canonical_row(const audit_row& r) {
  std::string out;
  out.reserve(128 + r.tenant.size() + r.event_id.size() + r.principal.size() + r.action.size() +
              r.sandbox_id.size() + r.outcome.size() + r.detail.size());
  out += "sandboxd-audit-v1\n";
  field(out, r.tenant);
  field(out, std::to_string(r.partition));
  field(out, std::to_string(r.position));
  field(out, r.event_id);
  field(out, std::to_string(r.occurred_at_ns));
  field(out, r.principal);
  field(out, r.action);
  field(out, r.sandbox_id);
  field(out, r.outcome);
  field(out, r.detail);
  return out;
}

std::string chain_hash(const std::string& prev_hash, const audit_row& row) {
  return sha256_hex(prev_hash, canonical_row(row));
}

void link(audit_row& row, const std::string& prev_hash) {
  row.prev_hash = prev_hash;
  row.hash = chain_hash(prev_hash, row);
}

} // namespace sandboxd::projections
