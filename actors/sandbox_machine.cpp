// sandbox_machine.cpp — decide and evolve for one sandbox (docs/state-machine.md).
// One file on purpose: decide and evolve are two halves of one table, read side by side.
#include "actors/sandbox_machine.hpp"

#include "actors/machine_rules.hpp"
#include "base/snapshot_id.hpp"
#include "base/utf8.hpp"
#include "network/policy.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace sandboxd::actors {

using events::errc;
using events::error;
using status = sandbox_status;

std::string_view to_string(sandbox_status s) {
  switch (s) {
  case status::absent:
    return "absent";
  case status::creating:
    return "creating";
  case status::running:
    return "running";
  case status::pausing:
    return "pausing";
  case status::paused:
    return "paused";
  case status::resuming:
    return "resuming";
  case status::deleting:
    return "deleting";
  case status::deleted:
    return "deleted";
  case status::failed:
    return "failed";
  case status::claiming:
    return "claiming";
  }
  return "unknown";
}

sandbox_state initial_state(std::string sandbox_id) {
  sandbox_state s;
  s.sandbox_id = std::move(sandbox_id);
  return s;
}

// command_body lists the commands in command_kind order.
static_assert(std::variant_size_v<command_body> ==
              static_cast<std::size_t>(events::command_kind::delete_snapshot) + 1);

bool unclaimed_pool_sandbox(const sandbox_state& s) {
  return !s.spec.pool.empty() && s.tenant == events::k_pool_tenant;
}

bool claimable(const sandbox_state& s) {
  return unclaimed_pool_sandbox(s) && s.execs_in_flight.empty() && s.file_ops_in_flight.empty() &&
         s.connections_open.empty();
}

events::command_kind kind_of(const command_body& body) {
  return static_cast<events::command_kind>(body.index());
}

namespace {

using namespace rules;

// Empty when the timeouts are acceptable.
std::string check_timeouts(const events::sandbox_timeouts& t) {
  if (t.idle_timeout.count() < 0 || t.max_lifetime.count() < 0 || t.paused_retention.count() < 0 ||
      t.timeout.count() < 0)
    return "timeouts must not be negative; use 0 for none";
  if (static_cast<unsigned>(t.on_idle) > 1 || static_cast<unsigned>(t.idle_pause_mode) > 1)
    return "unknown idle action or pause mode; use pause/delete and filesystem/memory";
  return {};
}

// Empty when the labels, env and timeouts a create or a claim asks for are acceptable.
std::string check_settings(const std::vector<events::label>& labels,
                           const std::vector<events::env_var>& env,
                           const events::sandbox_timeouts& timeouts) {
  for (const auto& l : labels)
    if (l.key.empty())
      return "a label key is empty; give every label a key";
  for (const auto& l : labels)
    if (!is_text(l.key) || !is_text(l.value))
      return "label \"" + text_of(l.key) + "\" holds a NUL byte or is not UTF-8; use UTF-8 text";
  for (const auto& v : env)
    if (!is_text(v.name) || !is_text(v.value))
      return "env variable \"" + text_of(v.name) +
             "\" holds a NUL byte or is not UTF-8; OCI runtimes take only UTF-8 text";
  return check_timeouts(timeouts);
}

std::string check_spec(const events::created& spec) {
  if (spec.template_name.empty())
    return "a template is required; name one of the node's templates";
  if (spec.limits.memory_mib == 0 || spec.limits.cpu_millicores == 0)
    return "memory and CPU limits must be positive; set memory_mib and cpu_millicores";
  if (!is_text(spec.template_name))
    return "the template name holds a NUL byte or is not UTF-8; name one of the node's templates";
  return check_settings(spec.labels, spec.env, spec.timeouts);
}

template <class T, class... Ts>
constexpr bool one_of = (std::is_same_v<T, Ts> || ...);
template <class T>
constexpr bool is_operation =
  one_of<T, cmd::exec, cmd::kill_exec, cmd::exec_finished, cmd::read_file, cmd::list_dir,
         cmd::stat_path, cmd::write_file, cmd::make_dir, cmd::remove_path, cmd::rename_path>;

struct decider {
  const sandbox_state& s;
  const command& c;
  time_point now;

  decision accept(events::payload p) const { return rules::accept(s, c, now, std::move(p)); }

  // exec, kill_exec, exec_finished and the file operations: sandbox_operations.cpp.
  template <class Op>
  requires is_operation<Op> decision operator()(const Op&) const {
    return decide_operation(s, c, now);
  }

  decision operator()(const cmd::create& x) const {
    if (s.status == status::absent) {
      if (c.tenant.empty())
        return reject(invalid(s, "create needs the caller's tenant"));
      // Only a warm pool makes pool sandboxes, and it makes nothing else.
      if (x.spec.pool.empty() == (c.tenant == events::k_pool_tenant))
        return reject(invalid(s, x.spec.pool.empty()
                                   ? "the pool tenant creates only pool sandboxes; name a pool"
                                   : "only a warm pool creates a pool sandbox; create without "
                                     "a pool key"));
      if (auto why = check_spec(x.spec); !why.empty())
        return reject(invalid(s, why));
      auto spec = x.spec;
      spec.env = loggable(std::move(spec.env)); // secrets reach the driver, never the log
      return accept(std::move(spec));
    }
    if (!x.spec.client_request_id.empty() && x.spec.client_request_id == s.spec.client_request_id)
      return accept_nothing(); // a retried create: the sandbox it made is the answer
    return reject(events::make_error(
      errc::conflict, "sandbox " + s.sandbox_id + " already exists (" + describe(s) +
                        "); create with a new sandbox id, or repeat the original client "
                        "request id to get this one"));
  }

  // A claim whose client request id the sandbox already answers to (its claim's or its
  // create's) is a retried create: the sandbox it made is the answer, as for create.
  decision operator()(const cmd::claim& x) const {
    const auto& want = x.claim;
    if (!want.client_request_id.empty() && want.client_request_id == s.spec.client_request_id)
      return accept_nothing();
    if (!claimable(s))
      return reject(conflict(s, "be claimed",
                             unclaimed_pool_sandbox(s)
                               ? "it is in use; claim another pool sandbox"
                               : "it is not an unclaimed pool sandbox; create a sandbox instead"));
    if (s.status != status::running)
      return reject(conflict(s, "be claimed", "claim a running pool sandbox"));
    if (c.tenant.empty() || c.tenant == events::k_pool_tenant)
      return reject(invalid(s, "a claim needs the claiming tenant"));
    if (auto why = check_settings(want.labels, want.env, want.timeouts); !why.empty())
      return reject(invalid(s, why));
    auto claim = want;
    claim.env = loggable(std::move(claim.env)); // secrets reach the driver, never the log
    if (claim.env.empty()) // nothing to apply: its execs see the template's, as they do now
      return emitter(s, c, now).add(std::move(claim)).add(events::claimed{}).done();
    return accept(std::move(claim));
  }

  decision operator()(const cmd::runtime_claimed&) const {
    return runtime_result(status::claiming, "record claimed", events::claimed{});
  }

  decision operator()(const cmd::pause& x) const {
    if (s.status != status::running)
      return reject(
        conflict(s, "pause", s.status == status::paused ? "it is already paused" : std::string{}));
    return accept(events::pause_requested{x.mode, x.reason});
  }

  decision operator()(const cmd::resume&) const {
    if (s.status != status::paused)
      return reject(
        conflict(s, "resume", s.status == status::running ? "it is already running" : ""));
    return accept(events::resume_requested{});
  }

  decision operator()(const cmd::remove&) const {
    if (s.status == status::deleting)
      return accept_nothing(); // the delete in flight completes this one
    return accept(events::delete_requested{events::delete_reason::user});
  }

  // Only a deleted sandbox: what runs or is kept still needs its details.
  decision operator()(const cmd::redact& x) const {
    if (s.status != status::deleted)
      return reject(
        conflict(s, "redact it", "delete it first; only a deleted sandbox is redacted"));
    if (s.redacted)
      return accept_nothing(); // done before: the read models no longer hold the details
    return accept(events::redacted{x.reason});
  }

  decision operator()(const cmd::set_network& x) const {
    if (s.status == status::deleting)
      return reject(conflict(s, "change its network"));
    auto p = network::compile(x.network);
    if (!p)
      return reject(invalid(s, p.err().message));
    return accept(events::network_changed{network::to_event(*p)});
  }

  decision operator()(const cmd::open_connection& x) const {
    if (s.status != status::running)
      return reject(conflict(s, "open a connection"));
    const auto& d = x.destination;
    bool dns = d.protocol == events::net_protocol::dns;
    if (dns ? !x.connection_id.empty() : x.connection_id.empty())
      return reject(invalid(s, dns ? "a DNS question takes no connection id"
                                   : "a connection needs a connection id"));
    if (!dns && std::find(s.connections_open.begin(), s.connections_open.end(), x.connection_id) !=
                  s.connections_open.end())
      return reject(invalid(s, "connection " + x.connection_id + " is already open"));
    if (!dns && s.connections_open.size() >= k_max_open_connections)
      return reject(events::make_error(
        errc::resource_exhausted, "sandbox " + s.sandbox_id + " has " +
                                    std::to_string(k_max_open_connections) +
                                    " connections open, its most; close some before opening more"));
    auto p = network::compile(s.spec.network);
    network::verdict v;
    if (!p) { // a policy logged by a newer version this one cannot read: deny
      v.reason = p.err().message;
    } else {
      network::destination nd;
      nd.protocol =
        d.protocol == events::net_protocol::udp ? network::protocol::udp : network::protocol::tcp;
      nd.name = d.name;
      nd.port = d.port;
      nd.name_resolves = d.name_resolves;
      if (!dns) {
        nd.address = network::parse_address(d.address);
        auto k = network::address_class_named(d.address_class);
        if (!nd.address || !k) {
          v.reason =
            "address '" + d.address + "' (" + d.address_class + ") is not one sandboxd dials";
          return accept(events::connection_denied{d, v.reason});
        }
        nd.klass = *k;
      }
      v = network::evaluate(*p, nd);
    }
    if (!v.allowed)
      return accept(events::connection_denied{d, v.reason});
    if (dns)
      return accept_nothing();
    return accept(events::connection_opened{x.connection_id, d, v.rule});
  }

  decision operator()(const cmd::close_connection& x) const {
    if (std::find(s.connections_open.begin(), s.connections_open.end(), x.closed.connection_id) ==
        s.connections_open.end())
      return accept_nothing(); // ended with the sandbox's processes, or closed before
    return accept(x.closed);
  }

  decision operator()(const cmd::set_timeout& x) const {
    if (s.status == status::deleting)
      return reject(conflict(s, "change its timeouts"));
    if (auto why = check_timeouts(x.timeouts); !why.empty())
      return reject(invalid(s, why));
    auto t = x.timeouts;
    // While running, a timeout counts from now: the run time so far plus the one asked for.
    if (s.status == status::running && t.timeout.count() > 0)
      t.timeout += now - s.status_since;
    return accept(events::timeout_changed{t});
  }

  decision operator()(const cmd::snapshot& x) const {
    if (x.finished) {
      if (!rules::file_op_in_flight(s, x.finished->op_id))
        return reject(events::make_error(
          errc::not_found, "snapshot operation \"" + x.finished->op_id + "\" of sandbox " +
                             s.sandbox_id + " is not in flight; ignore its outcome"));
      return accept(*x.finished);
    }
    if (s.status != status::running && s.status != status::paused)
      return reject(conflict(s, "take a snapshot"));
    if (!is_snapshot_id(x.snapshot_id))
      return reject(invalid(s, "snapshot id \"" + text_of(x.snapshot_id.substr(0, 80)) +
                                 "\" is not snap- and 16 hex digits"));
    if (x.op_id.empty() || rules::file_op_in_flight(s, x.op_id))
      return reject(invalid(s, "snapshot operation id \"" + x.op_id +
                                 "\" is empty or in flight; use a new unique id"));
    if (x.name.size() > 128 || !is_text(x.name))
      return reject(invalid(s, "a snapshot name is at most 128 bytes of UTF-8 text"));
    return accept(events::snapshot_requested{x.op_id, x.snapshot_id, x.name});
  }

  decision operator()(const cmd::delete_snapshot& x) const {
    if (!is_snapshot_id(x.snapshot_id))
      return reject(invalid(s, "snapshot id \"" + text_of(x.snapshot_id.substr(0, 80)) +
                                 "\" is not snap- and 16 hex digits"));
    return accept(events::snapshot_deleted{x.snapshot_id});
  }

  // `p` ends the sandbox's processes (a filesystem pause, a delete, a failure): each exec in
  // flight gets its outcome first — failed, saying so — as no result of it will be accepted
  // after `p`; with `files` (a delete) each file change in flight too.
  decision ending_operations(events::payload p, const std::string& ended_by, bool files) const {
    emitter out(s, c, now);
    const auto why = events::make_error(errc::conflict, "sandbox " + s.sandbox_id + " " + ended_by +
                                                          " while it ran");
    for (const auto& id : s.execs_in_flight) {
      events::exec_finished f;
      f.exec_id = id;
      f.exit_code = -1;
      f.outcome = events::op_outcome::failed;
      f.failure = why;
      out.add(std::move(f));
    }
    for (const auto& id : s.connections_open) {
      events::connection_closed f;
      f.connection_id = id;
      f.outcome = events::op_outcome::failed;
      f.error_message = why.message;
      out.add(std::move(f));
    }
    if (files)
      for (const auto& op : s.file_ops_in_flight) {
        if (op.kind == events::file_op_kind::snapshot) {
          events::snapshot_taken t;
          t.op_id = op.op_id;
          t.outcome = events::op_outcome::failed;
          t.failure = why;
          out.add(std::move(t));
          continue;
        }
        events::file_op_finished f;
        f.op_id = op.op_id;
        f.kind = op.kind;
        f.outcome = events::op_outcome::failed;
        f.failure = why;
        out.add(std::move(f));
      }
    return out.add(std::move(p)).done();
  }

  // Runtime results are accepted only for the step in flight; anything else is stale.
  decision stale(std::string_view what) const {
    return reject(conflict(s, what, "the runtime result is stale; ignore it"));
  }
  decision runtime_result(status expected, std::string_view what, events::payload p) const {
    if (s.status != expected)
      return stale(what);
    return accept(std::move(p));
  }
  decision operator()(const cmd::runtime_started&) const {
    return runtime_result(status::creating, "record started", events::started{});
  }
  decision operator()(const cmd::runtime_paused& x) const {
    if (s.status != status::pausing)
      return stale("record paused");
    events::paused p{s.pause_mode, x.writable_layer_bytes};
    if (s.pause_mode == events::pause_mode::memory)
      return accept(p); // its processes are kept, and its execs with them
    return ending_operations(p, "was paused (filesystem), which ended its processes,", false);
  }
  decision operator()(const cmd::runtime_resumed&) const {
    return runtime_result(status::resuming, "record resumed", events::resumed{});
  }
  decision operator()(const cmd::runtime_deleted& x) const {
    if (s.status != status::deleting)
      return stale("record deleted");
    return ending_operations(events::deleted{x.writable_layer_bytes}, "was deleted", true);
  }
  decision operator()(const cmd::runtime_failed& x) const {
    auto step = step_in_flight(s);
    // `running` names no step: the sandbox was found dead or changed outside one.
    if (!step && (s.status == status::running || (x.at_recovery && s.status == status::paused)))
      step = events::runtime_step::running;
    if (!step)
      return reject(conflict(s, "record a runtime failure", "no runtime step is in flight"));
    return ending_operations(events::failed{*step, x.reason}, "failed (" + x.reason + ")", false);
  }

  decision operator()(const cmd::storage_sampled& x) const { return accept(x); }

  decision timer(const std::optional<time_point>& deadline, std::string_view what,
                 events::payload p) const {
    if (!deadline || now < *deadline)
      return reject(conflict(s, what, "the timer is not due; re-arm it from next_deadlines"));
    return accept(std::move(p));
  }
  // The idle action: delete, or pause in the idle pause mode.
  decision idle_action(const std::optional<time_point>& deadline, std::string_view what) const {
    const auto& t = s.spec.timeouts;
    if (t.on_idle == events::idle_action::delete_sandbox)
      return timer(deadline, what, events::delete_requested{events::delete_reason::idle_timeout});
    return timer(deadline, what,
                 events::pause_requested{t.idle_pause_mode, events::pause_reason::idle_timeout});
  }
  decision operator()(const cmd::idle_timer&) const {
    return idle_action(next_deadlines(s).idle, "idle out");
  }
  decision operator()(const cmd::timeout_timer&) const {
    return idle_action(next_deadlines(s).timeout, "end its run time");
  }
  decision operator()(const cmd::lifetime_timer&) const {
    return timer(next_deadlines(s).lifetime, "end its lifetime",
                 events::delete_requested{events::delete_reason::lifetime});
  }
  decision operator()(const cmd::retention_timer&) const {
    return timer(next_deadlines(s).retention, "end its retention",
                 events::delete_requested{events::delete_reason::retention});
  }
};

// The commands a sandbox that does not exist (absent) or no longer does (deleted) may take.
bool is_create(const command_body& b) {
  return std::holds_alternative<cmd::create>(b);
}
bool is_redact_of_deleted(const sandbox_state& s, const command_body& b) {
  return s.status == status::deleted && (std::holds_alternative<cmd::redact>(b) ||
                                         std::holds_alternative<cmd::delete_snapshot>(b));
}
// A retried claim of a deleted sandbox (its client request id): answered like a retried
// create, with the deleted sandbox.
bool is_retried_claim(const sandbox_state& s, const command_body& b) {
  const auto* x = std::get_if<cmd::claim>(&b);
  return s.status == status::deleted && x && !x->claim.client_request_id.empty() &&
         x->claim.client_request_id == s.spec.client_request_id;
}

} // namespace

decision decide(const sandbox_state& s, const command& c, time_point now) {
  if (!exists(s.status) && !is_create(c.body) && !is_redact_of_deleted(s, c.body) &&
      !is_retried_claim(s, c.body))
    return reject(events::make_error(
      errc::not_found, "sandbox " + s.sandbox_id +
                         (s.status == status::deleted ? " was deleted" : " does not exist") +
                         "; list sandboxes to find it, or create a new one"));
  return std::visit(decider{s, c, now}, c.body);
}

namespace {

void enter(sandbox_state& s, status next, time_point at) {
  s.status = next;
  s.status_since = at;
}

void forget_execs(sandbox_state& s) {
  s.execs_in_flight.clear();
  s.connections_open.clear();
}

struct evolver {
  sandbox_state& s;
  const events::event& e;

  void touch() const { s.last_activity_at = e.occurred_at; }

  void operator()(const events::unknown&) const {}
  void operator()(const events::command_rejected&) const {}
  // Template events have a stream of their own (events::template_stream_key).
  void operator()(const events::template_event&) const {}
  void operator()(const events::created& p) const {
    s.spec = p;
    s.tenant = e.tenant;
    s.created_at = e.occurred_at;
    enter(s, status::creating, e.occurred_at);
    touch();
  }
  void operator()(const events::started&) const {
    enter(s, status::running, e.occurred_at);
    touch();
  }
  // From the claim on, the sandbox is the claiming tenant's as if created then: its lifetime
  // counts from the claim, and it has the claim's labels, environment and timeouts.
  void operator()(const events::claim_requested& p) const {
    s.tenant = e.tenant;
    s.spec.labels = p.labels;
    s.spec.env = p.env;
    s.spec.timeouts = p.timeouts;
    s.spec.client_request_id = p.client_request_id;
    s.created_at = e.occurred_at;
    enter(s, status::claiming, e.occurred_at);
    touch();
  }
  void operator()(const events::claimed&) const {
    enter(s, status::running, e.occurred_at);
    touch();
  }
  void operator()(const events::pause_requested& p) const {
    s.pause_mode = p.mode;
    enter(s, status::pausing, e.occurred_at);
  }
  void operator()(const events::paused& p) const {
    s.pause_mode = p.mode;
    s.writable_layer_bytes = p.writable_layer_bytes;
    if (p.mode != events::pause_mode::memory)
      forget_execs(s); // a filesystem pause ends every process
    enter(s, status::paused, e.occurred_at);
  }
  void operator()(const events::resume_requested&) const {
    enter(s, status::resuming, e.occurred_at);
  }
  void operator()(const events::resumed&) const {
    enter(s, status::running, e.occurred_at);
    touch();
  }
  void operator()(const events::delete_requested&) const {
    enter(s, status::deleting, e.occurred_at);
  }
  void operator()(const events::deleted&) const {
    forget_execs(s);
    enter(s, status::deleted, e.occurred_at);
  }
  void operator()(const events::failed& p) const {
    s.failed_step = p.step;
    s.failure_reason = p.reason;
    forget_execs(s);
    enter(s, status::failed, e.occurred_at);
  }
  void operator()(const events::exec_started& p) const {
    if (std::find(s.execs_in_flight.begin(), s.execs_in_flight.end(), p.exec_id) ==
        s.execs_in_flight.end())
      s.execs_in_flight.push_back(p.exec_id);
    touch();
  }
  void operator()(const events::exec_finished& p) const {
    std::erase(s.execs_in_flight, p.exec_id);
    touch();
  }
  void operator()(const events::file_written&) const { touch(); }
  void operator()(const events::file_read&) const { touch(); }
  void operator()(const events::file_op_requested& p) const {
    s.file_ops_in_flight.push_back({p.op_id, p.kind});
    touch();
  }
  void operator()(const events::file_op_finished& p) const {
    std::erase_if(s.file_ops_in_flight, [&](const auto& o) { return o.op_id == p.op_id; });
    touch();
  }
  void operator()(const events::exec_kill_requested&) const {}
  void operator()(const events::redacted&) const {
    s.redacted = true;
    s.spec.labels.clear();
    s.spec.env.clear();
  }
  void operator()(const events::network_changed& p) const {
    s.spec.network = p.network;
    touch();
  }
  void operator()(const events::connection_opened& p) const {
    s.connections_open.push_back(p.connection_id);
  }
  void operator()(const events::connection_denied&) const {}
  void operator()(const events::connection_closed& p) const {
    std::erase(s.connections_open, p.connection_id);
  }
  void operator()(const events::storage_sampled& p) const {
    s.writable_layer_bytes = p.writable_layer_bytes;
  }
  void operator()(const events::snapshot_requested& p) const {
    s.file_ops_in_flight.push_back({p.op_id, events::file_op_kind::snapshot});
    touch();
  }
  void operator()(const events::snapshot_taken& p) const {
    if (!p.op_id.empty())
      std::erase_if(s.file_ops_in_flight, [&](const auto& o) { return o.op_id == p.op_id; });
    if (p.outcome == events::op_outcome::completed)
      s.writable_layer_bytes = p.writable_layer_bytes;
    touch();
  }
  void operator()(const events::snapshot_deleted&) const {}
  void operator()(const events::timeout_changed& p) const {
    s.spec.timeouts = p.timeouts;
    touch();
  }
};

} // namespace

void apply(sandbox_state& s, const events::event& e) {
  if (e.sequence <= s.sequence)
    return; // a duplicate delivery
  if (e.sequence != s.sequence + 1)
    throw std::invalid_argument("sandbox " + s.sandbox_id + ": event sequence " +
                                std::to_string(e.sequence) + " follows " +
                                std::to_string(s.sequence) + "; the log lost events");
  if (s.sandbox_id.empty())
    s.sandbox_id = e.sandbox_id;
  std::visit(evolver{s, e}, e.body);
  s.sequence = e.sequence;
}

sandbox_state evolve(sandbox_state s, const events::event& e) {
  apply(s, e);
  return s;
}

deadlines next_deadlines(const sandbox_state& s) {
  deadlines d;
  const auto& t = s.spec.timeouts;
  if (s.status == status::running && t.idle_timeout.count() > 0 && s.execs_in_flight.empty())
    d.idle = s.last_activity_at + t.idle_timeout;
  if (exists(s.status) && s.status != status::deleting && t.max_lifetime.count() > 0)
    d.lifetime = s.created_at + t.max_lifetime;
  if (s.status == status::paused && t.paused_retention.count() > 0)
    d.retention = s.status_since + t.paused_retention;
  if (s.status == status::running && t.timeout.count() > 0)
    d.timeout = s.status_since + t.timeout; // status_since: the last start or resume
  return d;
}

std::optional<events::runtime_step> step_in_flight(const sandbox_state& s) {
  switch (s.status) {
  case status::creating:
    return events::runtime_step::creating;
  case status::pausing:
    return events::runtime_step::pausing;
  case status::resuming:
    return events::runtime_step::resuming;
  case status::deleting:
    return events::runtime_step::deleting;
  case status::claiming:
    return events::runtime_step::claiming;
  default:
    return std::nullopt;
  }
}

std::optional<events::event> rejection_event(const sandbox_state& s, const command& c,
                                             const events::error& err, time_point now) {
  if (!exists(s.status))
    return std::nullopt;
  auto d =
    emitter(s, c, now).add(events::command_rejected{kind_of(c.body), err.code, err.message}).done();
  return d.emitted().front();
}

} // namespace sandboxd::actors
