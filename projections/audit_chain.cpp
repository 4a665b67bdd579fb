#include "projections/audit_chain.hpp"

#include "base/sha256.hpp"

#include <algorithm>

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

std::string detail_digest(const audit_row& r) {
  return r.redacted ? r.detail_sha256 : sha256_hex(r.detail);
}

std::string canonical_row(const audit_row& r) {
  std::string out;
  out.reserve(192 + r.tenant.size() + r.event_id.size() + r.principal.size() + r.action.size() +
              r.sandbox_id.size() + r.outcome.size() + r.detail.size());
  out += r.hash_version == 1 ? "sandboxd-audit-v1\n" : "sandboxd-audit-v2\n";
  field(out, r.tenant);
  field(out, std::to_string(r.partition));
  field(out, std::to_string(r.position));
  field(out, r.event_id);
  field(out, std::to_string(r.occurred_at_ns));
  field(out, r.principal);
  field(out, r.action);
  field(out, r.sandbox_id);
  field(out, r.outcome);
  field(out, r.hash_version == 1 ? r.detail : detail_digest(r));
  return out;
}

std::string chain_hash(const std::string& prev_hash, const audit_row& row) {
  return sha256_hex(prev_hash, canonical_row(row));
}

const std::vector<std::string>& private_detail_actions() {
  static const std::vector<std::string> actions{
    // accepted operations and their outcomes
    "exec_started", "exec_finished", "exec_kill_requested", "file_written", "file_read",
    "file_op_requested", "file_op_finished",
    // where the sandbox connected to (names and addresses) and the policy that allowed it
    "network_changed", "connection_opened", "connection_denied", "connection_closed",
    // rejected commands whose message may quote what was asked
    "create_sandbox", "exec", "read_file", "write_file", "make_dir", "remove_path", "rename_path",
    "list_dir", "stat_path", "kill_exec", "set_network", "open_connection"};
  return actions;
}

bool has_private_detail(std::string_view action) {
  const auto& a = private_detail_actions();
  return std::find(a.begin(), a.end(), action) != a.end();
}

void link(audit_row& row, const std::string& prev_hash) {
  row.prev_hash = prev_hash;
  row.hash = chain_hash(prev_hash, row);
}

} // namespace sandboxd::projections
