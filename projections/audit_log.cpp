#include "projections/audit_log.hpp"

#include "projections/sandbox_row.hpp"

#include <pqxx/pqxx>

#include <map>

namespace sandboxd::projections {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty())
      out += ' ';
    out += s;
  }
  return out;
}

std::string detail_of(const events::payload& p) {
  using namespace events;
  return std::visit(
    [](const auto& v) -> std::string {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, created>)
        return "template " + v.template_name + ", " + std::to_string(v.limits.memory_mib) + " MiB";
      else if constexpr (std::is_same_v<T, pause_requested>)
        return to_string(v.mode) + " pause (" + to_string(v.reason) + ")";
      else if constexpr (std::is_same_v<T, paused>)
        return to_string(v.mode) + ", " + std::to_string(v.writable_layer_bytes) + " bytes";
      else if constexpr (std::is_same_v<T, delete_requested>)
        return to_string(v.reason);
      else if constexpr (std::is_same_v<T, failed>)
        return to_string(v.step) + ": " + v.reason;
      else if constexpr (std::is_same_v<T, exec_started>)
        return v.exec_id + ": " + join(v.argv);
      else if constexpr (std::is_same_v<T, exec_finished>)
        return v.exec_id + ": exit " + std::to_string(v.exit_code) +
               (v.timed_out ? " (timed out)" : "");
      else if constexpr (std::is_same_v<T, file_written> || std::is_same_v<T, file_read>)
        return v.path + ", " + std::to_string(v.bytes) + " bytes";
      else if constexpr (std::is_same_v<T, storage_sampled>)
        return std::to_string(v.writable_layer_bytes) + " bytes";
      else if constexpr (std::is_same_v<T, snapshot_taken>)
        return v.snapshot_id + ", " + std::to_string(v.writable_layer_bytes) + " bytes";
      else if constexpr (std::is_same_v<T, command_rejected>)
        return v.message;
      else if constexpr (std::is_same_v<T, unknown>)
        return "payload ordinal " + std::to_string(v.ordinal);
      else
        return "";
    },
    p);
}

} // namespace

audit_row audit_row_of(const events::event& e, std::int32_t partition) {
  audit_row r;
  r.tenant = e.tenant;
  r.partition = partition;
  r.event_id = e.event_id;
  r.occurred_at_ns = to_ns(e.occurred_at);
  r.principal = e.principal;
  r.sandbox_id = e.sandbox_id;
  if (const auto* rej = std::get_if<events::command_rejected>(&e.body)) {
    r.action = events::to_string(rej->command);
    r.outcome = events::to_string(rej->code);
  } else {
    r.action = std::string(events::type_name(e.body));
    r.outcome = "accepted";
  }
  r.detail = detail_of(e.body);
  return r;
}

std::vector<audit_finding> verify_audit_log(pqxx::transaction_base& tx) {
  std::vector<audit_finding> out;
  auto name = [](const audit_row& r) {
    return "audit row " + std::to_string(r.position) + " of tenant " + r.tenant + " partition " +
           std::to_string(r.partition) + " (event " + r.event_id + ")";
  };
  std::map<std::pair<std::string, std::int32_t>, std::pair<std::int64_t, std::string>> heads;
  for (const auto& row : tx.exec("SELECT tenant, partition, position, encode(hash, 'hex')"
                                 " FROM audit_chain_heads"))
    heads[{row[0].as<std::string>(), row[1].as<std::int32_t>()}] = {row[2].as<std::int64_t>(),
                                                                    row[3].as<std::string>()};

  auto rows = tx.exec("SELECT tenant, partition, position, event_id, occurred_at_ns, principal,"
                      " action, sandbox_id, outcome, detail, encode(prev_hash, 'hex'),"
                      " encode(hash, 'hex') FROM audit_log"
                      " ORDER BY tenant, partition, position");
  audit_row prev;
  bool have_prev = false;
  auto finish_chain = [&](const audit_row& last) {
    auto it = heads.find({last.tenant, last.partition});
    if (it == heads.end())
      return;
    auto [pos, hash] = it->second;
    if (last.position < pos)
      out.push_back({last.tenant, last.partition, last.position + 1, "", "truncated",
                     "audit chain of tenant " + last.tenant + " partition " +
                       std::to_string(last.partition) + " ends at row " +
                       std::to_string(last.position) + " but its head is row " +
                       std::to_string(pos) + ": rows " + std::to_string(last.position + 1) +
                       " to " + std::to_string(pos) + " were deleted"});
    else if (last.position == pos && last.hash != hash)
      out.push_back({last.tenant, last.partition, last.position, last.event_id, "edited",
                     name(last) + " is not the row the chain head recorded"});
    heads.erase(it);
  };
  for (const auto& f : rows) {
    audit_row r;
    r.tenant = f[0].as<std::string>();
    r.partition = f[1].as<std::int32_t>();
    r.position = f[2].as<std::int64_t>();
    r.event_id = f[3].as<std::string>();
    r.occurred_at_ns = f[4].as<std::int64_t>();
    r.principal = f[5].as<std::string>();
    r.action = f[6].as<std::string>();
    r.sandbox_id = f[7].as<std::string>();
    r.outcome = f[8].as<std::string>();
    r.detail = f[9].as<std::string>();
    r.prev_hash = f[10].as<std::string>();
    r.hash = f[11].as<std::string>();
    bool same_chain = have_prev && prev.tenant == r.tenant && prev.partition == r.partition;
    if (have_prev && !same_chain)
      finish_chain(prev);
    std::int64_t expected_pos = same_chain ? prev.position + 1 : 1;
    const std::string& expected_prev = same_chain ? prev.hash : audit_genesis_hash();
    if (r.position != expected_pos) {
      out.push_back({r.tenant, r.partition, expected_pos, "", "missing",
                     "audit rows " + std::to_string(expected_pos) + " to " +
                       std::to_string(r.position - 1) + " of tenant " + r.tenant + " partition " +
                       std::to_string(r.partition) + " are missing (deleted)"});
    } else if (r.prev_hash != expected_prev) {
      out.push_back({r.tenant, r.partition, r.position, r.event_id, "out of order",
                     name(r) + " does not follow the row before it (rows swapped or replaced)"});
    }
    if (chain_hash(r.prev_hash, r) != r.hash)
      out.push_back({r.tenant, r.partition, r.position, r.event_id, "edited",
                     name(r) + " was edited: its contents do not match its hash"});
    prev = std::move(r);
    have_prev = true;
  }
  if (have_prev)
    finish_chain(prev);
  for (const auto& [key, head] : heads)
    out.push_back({key.first, key.second, 1, "", "truncated",
                   "audit chain of tenant " + key.first + " partition " +
                     std::to_string(key.second) + " has no rows but its head is row " +
                     std::to_string(head.first)});
  return out;
}

} // namespace sandboxd::projections
