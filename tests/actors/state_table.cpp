// state_table.cpp — parsing docs/state-machine.md and classifying states and commands.
#include "tests/actors/state_table.hpp"

#include "tests/support/build_tree.hpp"

#include "base/snapshot_id.hpp"
#include "base/utf8.hpp"
#include "network/policy.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sandboxd::actors::testing {

namespace {

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t`");
  auto e = s.find_last_not_of(" \t`");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

// The cells of a markdown table row "| a | b |".
std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return out;
}

const std::map<std::string, events::errc>& error_names() {
  static const std::map<std::string, events::errc> names{
    {"not_found", events::errc::not_found},
    {"conflict", events::errc::conflict},
    {"permission_denied", events::errc::permission_denied},
    {"invalid_argument", events::errc::invalid_argument},
    {"resource_exhausted", events::errc::resource_exhausted},
    {"unavailable", events::errc::unavailable},
  };
  return names;
}

cell parse_cell(const std::string& text) {
  cell c;
  c.text = text;
  if (text == "ok") {
    c.what = cell::kind::ok;
  } else if (text == "n/a") {
    c.what = cell::kind::not_applicable;
  } else if (auto it = error_names().find(text); it != error_names().end()) {
    c.what = cell::kind::error;
    c.code = it->second;
  } else {
    const std::string arrow = "→";
    auto pos = text.find(arrow);
    if (pos == std::string::npos)
      throw std::runtime_error("state table: cannot read cell \"" + text + "\"");
    c.what = cell::kind::events;
    std::stringstream names(text.substr(0, pos));
    std::string name;
    while (std::getline(names, name, '+'))
      c.event_names.push_back(trim(name));
    c.next = trim(text.substr(pos + arrow.size()));
  }
  return c;
}

std::string source_dir() {
  return sandboxd::test::source_tree();
}

bool path_ok(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.find('\0') != std::string::npos)
    return false;
  std::stringstream parts(p);
  std::string part;
  while (std::getline(parts, part, '/'))
    if (part == "..")
      return false;
  return true;
}

bool timeouts_ok(const events::sandbox_timeouts& t) {
  return t.idle_timeout.count() >= 0 && t.max_lifetime.count() >= 0 &&
         t.paused_retention.count() >= 0 && t.timeout.count() >= 0 &&
         static_cast<int>(t.on_idle) <= 1 && static_cast<int>(t.idle_pause_mode) <= 1;
}

bool settings_ok(const std::vector<events::label>& labels, const std::vector<events::env_var>& env,
                 const events::sandbox_timeouts& t);

bool spec_ok(const events::created& spec) {
  if (spec.template_name.empty() || spec.limits.memory_mib == 0 || spec.limits.cpu_millicores == 0)
    return false;
  return is_text(spec.template_name) && settings_ok(spec.labels, spec.env, spec.timeouts);
}

bool exists(const sandbox_state& s) {
  return s.status != sandbox_status::absent && s.status != sandbox_status::deleted;
}

bool has_op(const sandbox_state& s, const std::string& id) {
  for (const auto& e : s.file_ops_in_flight)
    if (e.op_id == id)
      return true;
  return false;
}

template <events::command_kind K>
std::string read_input(const cmd::file_query<K>& x) {
  if (x.served)
    return "read_served";
  return path_ok(x.path) ? "read_file" : "read_file_invalid";
}

events::file_op_kind op_kind_for(events::command_kind k) {
  switch (k) {
  case events::command_kind::make_dir:
    return events::file_op_kind::make_dir;
  case events::command_kind::remove_path:
    return events::file_op_kind::remove;
  case events::command_kind::rename_path:
    return events::file_op_kind::rename;
  default:
    return events::file_op_kind::write;
  }
}

template <events::command_kind K>
std::string change_input(const sandbox_state& s, const cmd::file_change<K>& x) {
  if (x.finished)
    return has_op(s, x.finished->op_id) ? "file_change_finished" : "file_change_finished_unknown";
  const auto& op = x.op;
  bool ok = !op.op_id.empty() && !has_op(s, op.op_id) && op.kind == op_kind_for(K) &&
            path_ok(op.path) && (op.kind != events::file_op_kind::rename || path_ok(op.to_path));
  return ok ? "file_change" : "file_change_invalid";
}

bool has_exec(const sandbox_state& s, const std::string& id) {
  for (const auto& e : s.execs_in_flight)
    if (e == id)
      return true;
  return false;
}

bool has_connection(const sandbox_state& s, const std::string& id) {
  for (const auto& c : s.connections_open)
    if (c == id)
      return true;
  return false;
}

bool settings_ok(const std::vector<events::label>& labels, const std::vector<events::env_var>& env,
                 const events::sandbox_timeouts& t) {
  for (const auto& l : labels)
    if (l.key.empty() || !is_text(l.key) || !is_text(l.value))
      return false;
  for (const auto& v : env)
    if (!is_text(v.name) || !is_text(v.value))
      return false;
  return timeouts_ok(t);
}

// A claim's row: the document's rules, from the state's fields.
std::string claim_input(const sandbox_state& s, const cmd::claim& x) {
  const auto& crid = x.claim.client_request_id;
  if (s.status != sandbox_status::absent && !crid.empty() && crid == s.spec.client_request_id)
    return "claim_same_request";
  bool claimable = !s.spec.pool.empty() && s.tenant == "@pool" && s.execs_in_flight.empty() &&
                   s.file_ops_in_flight.empty() && s.connections_open.empty();
  if (!claimable)
    return "claim_not_pool";
  if (!settings_ok(x.claim.labels, x.claim.env, x.claim.timeouts))
    return "claim_invalid";
  return x.claim.env.empty() ? "claim_no_env" : "claim";
}

std::string connection_input(const sandbox_state& s, const cmd::open_connection& x) {
  const auto& d = x.destination;
  bool dns = d.protocol == events::net_protocol::dns;
  if (dns != x.connection_id.empty() || (!dns && has_connection(s, x.connection_id)))
    return "open_connection_invalid";
  auto p = network::compile(s.spec.network);
  if (!p)
    return "open_connection_denied";
  network::destination nd;
  nd.protocol =
    d.protocol == events::net_protocol::udp ? network::protocol::udp : network::protocol::tcp;
  nd.name = d.name;
  nd.port = d.port;
  nd.name_resolves = d.name_resolves;
  if (!dns) {
    nd.address = network::parse_address(d.address);
    auto k = network::address_class_named(d.address_class);
    if (!nd.address || !k)
      return "open_connection_denied";
    nd.klass = *k;
  }
  if (!network::evaluate(*p, nd).allowed)
    return "open_connection_denied";
  return dns ? "dns_allowed" : "open_connection";
}

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

} // namespace

const cell& state_table::at(const std::string& row, const std::string& column) const {
  auto r = cells.find(row);
  if (r == cells.end())
    throw std::runtime_error("state table has no row " + row);
  auto c = r->second.find(column);
  if (c == r->second.end())
    throw std::runtime_error("state table has no column " + column);
  return c->second;
}

state_table load_state_table() {
  std::string path = source_dir() + "/docs/state-machine.md";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  state_table t;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.find("<!-- state-table:begin -->") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("<!-- state-table:end -->") != std::string::npos)
      break;
    if (!inside || line.empty() || line[0] != '|')
      continue;
    auto cells = split_row(line);
    if (t.columns.empty()) {
      t.columns.assign(cells.begin() + 1, cells.end());
      continue;
    }
    if (cells.front().starts_with("---"))
      continue;
    if (cells.size() != t.columns.size() + 1)
      throw std::runtime_error("state table row " + cells.front() + " has " +
                               std::to_string(cells.size() - 1) + " cells");
    t.rows.push_back(cells.front());
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      t.cells[cells.front()][t.columns[i]] = parse_cell(cells[i + 1]);
  }
  if (t.rows.empty())
    throw std::runtime_error("no state table between the markers in " + path);
  return t;
}

std::string column_of(const sandbox_state& s) {
  std::string name(to_string(s.status));
  if (s.status == sandbox_status::pausing || s.status == sandbox_status::paused)
    name += s.pause_mode == events::pause_mode::memory ? "_mem" : "_fs";
  return name;
}

bool next_matches(const std::string& next, const sandbox_state& s) {
  return next == column_of(s) || next == to_string(s.status);
}

std::string input_of(const sandbox_state& s, const command_body& c, time_point now) {
  const auto& t = s.spec.timeouts;
  auto due = [&](bool applies, time_point deadline) { return applies && now >= deadline; };
  return std::visit(
    overloaded{
      [&](const cmd::create& x) -> std::string {
        if (s.status != sandbox_status::absent && !x.spec.client_request_id.empty() &&
            x.spec.client_request_id == s.spec.client_request_id)
          return "create_same_request";
        return spec_ok(x.spec) ? "create" : "create_invalid";
      },
      [&](const cmd::pause& x) -> std::string {
        return x.mode == events::pause_mode::memory ? "pause_memory" : "pause_filesystem";
      },
      [&](const cmd::resume&) -> std::string { return "resume"; },
      [&](const cmd::remove&) -> std::string { return "delete"; },
      [&](const cmd::exec& x) -> std::string {
        bool ok = !x.exec_id.empty() && !has_exec(s, x.exec_id) && !x.argv.empty() &&
                  !x.argv[0].empty() && x.timeout.count() >= 0 && is_text(x.working_directory);
        for (const auto& a : x.argv)
          ok = ok && is_text(a);
        for (const auto& v : x.env)
          ok = ok && !v.name.empty() && v.name.find('=') == std::string::npos && is_text(v.name) &&
               is_text(v.value);
        return ok ? "exec" : "exec_invalid";
      },
      [&](const cmd::read_file& x) -> std::string { return read_input(x); },
      [&](const cmd::list_dir& x) -> std::string { return read_input(x); },
      [&](const cmd::stat_path& x) -> std::string { return read_input(x); },
      [&](const cmd::write_file& x) -> std::string { return change_input(s, x); },
      [&](const cmd::make_dir& x) -> std::string { return change_input(s, x); },
      [&](const cmd::remove_path& x) -> std::string { return change_input(s, x); },
      [&](const cmd::rename_path& x) -> std::string { return change_input(s, x); },
      [&](const cmd::kill_exec& x) -> std::string {
        return has_exec(s, x.exec_id) ? "kill_exec" : "kill_exec_unknown";
      },
      [&](const cmd::timeout_timer&) -> std::string {
        bool applies = s.status == sandbox_status::running && t.timeout.count() > 0;
        if (!due(applies, s.status_since + t.timeout))
          return "timeout_timer_early";
        return t.on_idle == events::idle_action::delete_sandbox ? "timeout_timer_delete"
                                                                : "timeout_timer_pause";
      },
      [&](const cmd::set_timeout& x) -> std::string {
        return timeouts_ok(x.timeouts) ? "set_timeout" : "set_timeout_invalid";
      },
      [&](const cmd::snapshot& x) -> std::string {
        if (x.finished)
          return has_op(s, x.finished->op_id) ? "snapshot_finished" : "snapshot_finished_unknown";
        return is_snapshot_id(x.snapshot_id) && !x.op_id.empty() && !has_op(s, x.op_id)
                 ? "snapshot"
                 : "snapshot_invalid";
      },
      [&](const cmd::delete_snapshot& x) -> std::string {
        return is_snapshot_id(x.snapshot_id) ? "delete_snapshot" : "delete_snapshot_invalid";
      },
      [&](const cmd::runtime_started&) -> std::string { return "runtime_started"; },
      [&](const cmd::claim& x) -> std::string { return claim_input(s, x); },
      [&](const cmd::runtime_claimed&) -> std::string { return "runtime_claimed"; },
      [&](const cmd::runtime_paused&) -> std::string { return "runtime_paused"; },
      [&](const cmd::runtime_resumed&) -> std::string { return "runtime_resumed"; },
      [&](const cmd::runtime_deleted&) -> std::string { return "runtime_deleted"; },
      [&](const cmd::runtime_failed& x) -> std::string {
        return x.at_recovery ? "runtime_lost" : "runtime_failed";
      },
      [&](const cmd::exec_finished& x) -> std::string {
        return has_exec(s, x.exec_id) ? "exec_finished" : "exec_finished_unknown";
      },
      [&](const cmd::storage_sampled&) -> std::string { return "storage_sampled"; },
      [&](const cmd::idle_timer&) -> std::string {
        bool applies = s.status == sandbox_status::running && t.idle_timeout.count() > 0 &&
                       s.execs_in_flight.empty();
        if (!due(applies, s.last_activity_at + t.idle_timeout))
          return "idle_timer_early";
        return t.on_idle == events::idle_action::delete_sandbox ? "idle_timer_delete"
                                                                : "idle_timer_pause";
      },
      [&](const cmd::lifetime_timer&) -> std::string {
        bool applies =
          exists(s) && s.status != sandbox_status::deleting && t.max_lifetime.count() > 0;
        return due(applies, s.created_at + t.max_lifetime) ? "lifetime_timer"
                                                           : "lifetime_timer_early";
      },
      [&](const cmd::redact&) -> std::string { return s.redacted ? "redact_repeated" : "redact"; },
      [&](const cmd::set_network& x) -> std::string {
        return network::compile(x.network) ? "set_network" : "set_network_invalid";
      },
      [&](const cmd::open_connection& x) -> std::string { return connection_input(s, x); },
      [&](const cmd::close_connection& x) -> std::string {
        return has_connection(s, x.closed.connection_id) ? "close_connection"
                                                         : "close_connection_unknown";
      },
      [&](const cmd::retention_timer&) -> std::string {
        bool applies = s.status == sandbox_status::paused && t.paused_retention.count() > 0;
        return due(applies, s.status_since + t.paused_retention) ? "retention_timer"
                                                                 : "retention_timer_early";
      },
    },
    c);
}

std::string mismatch(const cell& expected, const decision& d, const sandbox_state& after) {
  std::string got;
  if (!d.ok()) {
    got = events::to_string(d.failure().code) + ": " + d.failure().message;
    if (expected.what == cell::kind::error && expected.code == d.failure().code)
      return {};
  } else if (d.emitted().empty()) {
    got = "ok (no events)";
    if (expected.what == cell::kind::ok)
      return {};
  } else {
    std::vector<std::string> names;
    for (const auto& e : d.emitted()) {
      names.emplace_back(events::type_name(e.body));
      got += (got.empty() ? "" : "+") + names.back();
    }
    // The outcomes of the execs and file changes a filesystem pause, a delete or a failure
    // ends come first; the cell names the step's own event (the document's rule).
    if (!expected.event_names.empty() &&
        (expected.event_names[0] == "paused" || expected.event_names[0] == "deleted" ||
         expected.event_names[0] == "failed"))
      while (names.size() > expected.event_names.size() &&
             (names[0] == "exec_finished" || names[0] == "file_op_finished" ||
              names[0] == "snapshot_taken" || names[0] == "connection_closed"))
        names.erase(names.begin());
    got += " → " + column_of(after);
    if (expected.what == cell::kind::events && names == expected.event_names &&
        next_matches(expected.next, after))
      return {};
  }
  return "expected \"" + expected.text + "\", got \"" + got + "\"";
}

} // namespace sandboxd::actors::testing
