#include "projections/audit_log.hpp"

#include "base/utf8.hpp"
#include "projections/sandbox_row.hpp"

#include <pqxx/pqxx>

#include <map>
#include <optional>

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

std::string destination_of(const events::net_destination& d) {
  std::string out = events::to_string(d.protocol) + " " + d.name;
  if (!d.address.empty()) {
    bool v6 = d.address.find(':') != std::string::npos;
    std::string where = (v6 ? "[" + d.address + "]" : d.address) + ":" + std::to_string(d.port);
    out += d.name.empty() ? where : " (" + where + ")";
  }
  return out;
}

std::string layers_of(const std::vector<events::template_layer>& layers) {
  std::string out;
  for (const auto& l : layers)
    out += (out.empty() ? "" : " ") + to_hex(l.sha256);
  return out;
}

// "<name> (<id>): what changed".
std::string template_detail(const events::template_event& t) {
  using namespace events;
  std::string what = std::visit(
    [](const auto& v) -> std::string {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, template_created>)
        return to_string(v.source) + ", " + v.description +
               (v.parent_id.empty() ? "" : ", on " + v.parent_id);
      else if constexpr (std::is_same_v<T, template_layer_added>)
        return "layer " + std::to_string(v.index) + " " + to_hex(v.sha256) + ", " +
               std::to_string(v.bytes) + " bytes (" + v.origin +
               (v.reused ? ", stored already" : "") + ")";
      else if constexpr (std::is_same_v<T, template_step_started>)
        return "step " + std::to_string(v.index) + ": " + v.instruction;
      else if constexpr (std::is_same_v<T, template_step_finished>)
        return "step " + std::to_string(v.index) + " " + to_string(v.outcome) +
               (v.cached ? " (cached)" : "") + ", exit " + std::to_string(v.exit_code) +
               (v.failure ? ": " + v.failure->message : "");
      else if constexpr (std::is_same_v<T, template_ready>)
        return to_hex(v.digest) + ", layers " + layers_of(v.layers) + ", " +
               std::to_string(v.total_bytes) + " bytes";
      else if constexpr (std::is_same_v<T, template_failed>)
        return v.failure.message;
      else if constexpr (std::is_same_v<T, template_deleted>)
        return v.reason;
      else
        return "change ordinal " + std::to_string(v.ordinal);
    },
    t.change);
  return t.name + " (" + t.template_id + ", " + to_string(t.scope) + "): " + what;
}

std::string detail_of(const events::payload& p) {
  using namespace events;
  return std::visit(
    [](const auto& v) -> std::string {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, created>)
        return "template " + v.template_name + ", " + std::to_string(v.limits.memory_mib) + " MiB" +
               (v.pool.empty() ? "" : ", for pool " + v.pool);
      else if constexpr (std::is_same_v<T, claim_requested>)
        return "claimed from a warm pool" +
               (v.client_request_id.empty() ? "" : ", request " + v.client_request_id);
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
        return v.exec_id + ": " +
               (v.outcome == op_outcome::completed
                  ? "exit " + std::to_string(v.exit_code) + (v.timed_out ? " (timed out)" : "")
                  : to_string(v.outcome)) +
               (v.failure ? ": " + v.failure->message : "");
      else if constexpr (std::is_same_v<T, file_written>)
        return v.path + ", " + std::to_string(v.bytes) + " bytes";
      else if constexpr (std::is_same_v<T, file_read>)
        return (v.kind == file_read_kind::read ? std::string{} : to_string(v.kind) + " ") + v.path +
               (v.kind == file_read_kind::list ? ", " + std::to_string(v.entries) + " entries"
                                               : ", " + std::to_string(v.bytes) + " bytes") +
               (v.failure ? ": " + v.failure->message : "");
      else if constexpr (std::is_same_v<T, file_op_requested>)
        return v.op_id + ": " + to_string(v.kind) + " " + v.path +
               (v.to_path.empty() ? "" : " -> " + v.to_path) +
               (v.kind == file_op_kind::write ? ", " + std::to_string(v.bytes) + " bytes" : "");
      else if constexpr (std::is_same_v<T, file_op_finished>)
        return v.op_id + ": " + to_string(v.kind) + " " + to_string(v.outcome) +
               (v.failure ? ": " + v.failure->message : "");
      else if constexpr (std::is_same_v<T, exec_kill_requested>)
        return v.exec_id + ": signal " + std::to_string(v.signal);
      else if constexpr (std::is_same_v<T, storage_sampled>)
        return std::to_string(v.writable_layer_bytes) + " bytes";
      else if constexpr (std::is_same_v<T, snapshot_taken>)
        return (v.op_id.empty() ? std::string{} : v.op_id + ": ") + v.snapshot_id + " " +
               to_string(v.outcome) +
               (v.failure ? ": " + v.failure->message
                          : ", " + std::to_string(v.writable_layer_bytes) + " bytes");
      else if constexpr (std::is_same_v<T, snapshot_requested>)
        return v.op_id + ": " + v.snapshot_id + (v.name.empty() ? "" : " (" + v.name + ")");
      else if constexpr (std::is_same_v<T, snapshot_deleted>)
        return v.snapshot_id;
      else if constexpr (std::is_same_v<T, command_rejected>)
        return v.message;
      else if constexpr (std::is_same_v<T, redacted>)
        return v.reason;
      else if constexpr (std::is_same_v<T, network_changed>)
        return (v.network.mode == network_mode::full ? std::string("all")
                                                     : to_string(v.network.mode)) +
               (v.network.allowed_hosts.empty() ? "" : ": " + join(v.network.allowed_hosts));
      else if constexpr (std::is_same_v<T, connection_opened>)
        return v.connection_id + ": " + destination_of(v.destination) + " by rule " + v.rule;
      else if constexpr (std::is_same_v<T, connection_denied>)
        return v.reason +
               (v.repeats > 0 ? " (and " + std::to_string(v.repeats) + " more like it)" : "");
      else if constexpr (std::is_same_v<T, connection_closed>)
        return v.connection_id + ": " + std::to_string(v.bytes_out) + " bytes out, " +
               std::to_string(v.bytes_in) + " bytes in" +
               (v.outcome == op_outcome::completed ? "" : ", " + to_string(v.outcome)) +
               (v.error_message.empty() ? "" : ": " + v.error_message);
      else if constexpr (std::is_same_v<T, template_event>)
        return template_detail(v);
      else if constexpr (std::is_same_v<T, unknown>)
        return "payload ordinal " + std::to_string(v.ordinal);
      else
        return "";
    },
    p);
}

// The outcome of an operation's result event when it did not succeed: the error code's
// name, or "interrupted" (sandboxd stopped while it ran); empty when it succeeded or the
// event reports no operation.
std::optional<std::string> failure_of(const events::payload& p) {
  using namespace events;
  auto of = [](op_outcome outcome,
               const std::optional<error>& failure) -> std::optional<std::string> {
    if (failure)
      return to_string(failure->code);
    if (outcome == op_outcome::interrupted)
      return "interrupted";
    if (outcome != op_outcome::completed)
      return to_string(outcome);
    return std::nullopt;
  };
  if (const auto* x = std::get_if<exec_finished>(&p))
    return of(x->outcome, x->failure);
  if (const auto* x = std::get_if<file_op_finished>(&p))
    return of(x->outcome, x->failure);
  if (const auto* x = std::get_if<file_read>(&p))
    return of(op_outcome::completed, x->failure);
  if (std::holds_alternative<connection_denied>(p))
    return to_string(errc::permission_denied); // the policy refused it
  if (const auto* x = std::get_if<connection_closed>(&p))
    return x->outcome == op_outcome::completed ? std::nullopt
                                               : std::optional<std::string>(to_string(x->outcome));
  if (const auto* t = std::get_if<template_event>(&p)) {
    if (const auto* f = std::get_if<template_failed>(&t->change))
      return to_string(f->failure.code);
    if (const auto* s = std::get_if<template_step_finished>(&t->change))
      return of(s->outcome, s->failure);
  }
  return std::nullopt;
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
  } else if (std::holds_alternative<events::unknown>(e.body)) {
    r.action = "unknown";
    r.outcome = "unknown"; // accepted or rejected: only a newer version can tell
  } else if (const auto* t = std::get_if<events::template_event>(&e.body)) {
    // One action per change: template_created, template_ready, template_deleted, ...
    r.action = "template_" + std::string(events::change_name(t->change));
    r.outcome = failure_of(e.body).value_or("accepted");
  } else if (auto failure = failure_of(e.body)) {
    // An operation the runtime refused or that a restart interrupted: its own outcome.
    r.action = std::string(events::type_name(e.body));
    r.outcome = *failure;
  } else {
    r.action = std::string(events::type_name(e.body));
    r.outcome = "accepted";
  }
  // Tenants choose much of a detail (command lines, paths, labels, messages); PostgreSQL
  // takes only UTF-8 text, and a row it refused would stop the projection.
  r.detail = text_of(detail_of(e.body));
  r.tenant = text_of(r.tenant);
  r.event_id = text_of(r.event_id);
  r.principal = text_of(r.principal);
  r.sandbox_id = text_of(r.sandbox_id);
  return r;
}

std::vector<audit_finding> verify_audit_log(pqxx::transaction_base& tx) {
  using chain_key = std::pair<std::string, std::int32_t>;
  std::map<chain_key, recorded_head> heads;
  for (const auto& row : tx.exec("SELECT tenant, partition, position, encode(hash, 'hex')"
                                 " FROM audit_chain_heads"))
    heads[{row[0].as<std::string>(), row[1].as<std::int32_t>()}] = {row[2].as<std::int64_t>(),
                                                                    row[3].as<std::string>()};
  std::map<chain_key, std::vector<audit_row>> chains;
  for (const auto& f : tx.exec("SELECT tenant, partition, position, event_id, occurred_at_ns,"
                               " principal, action, sandbox_id, outcome, detail,"
                               " encode(prev_hash, 'hex'), encode(hash, 'hex'), hash_version,"
                               " redacted, encode(detail_sha256, 'hex') FROM audit_log"
                               " ORDER BY tenant, partition, position")) {
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
    r.hash_version = f[12].as<int>();
    r.redacted = f[13].as<bool>();
    r.detail_sha256 = f[14].is_null() ? std::string() : f[14].as<std::string>();
    chains[{r.tenant, r.partition}].push_back(std::move(r));
  }
  for (const auto& [key, head] : heads)
    chains.try_emplace(key); // a head without rows: its whole chain was deleted
  std::vector<audit_finding> out;
  for (auto& [key, rows] : chains) {
    std::optional<recorded_head> head;
    if (auto it = heads.find(key); it != heads.end())
      head = it->second;
    for (auto& f : verify_chain(key.first, key.second, rows, head))
      out.push_back(std::move(f));
    rows = {}; // verified: its memory goes
  }
  return out;
}

} // namespace sandboxd::projections
