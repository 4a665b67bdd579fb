// sandbox_machine.hpp — the pure sandbox state machine: what a command does to a sandbox.
//
// decide(state, command, now) returns the events a command emits, or the typed error that
// rejects it; evolve(state, event) returns the state after an event. Nothing here does
// I/O, reads a clock or knows about actors: the actor layer feeds commands (user requests,
// runtime results, timer firings) in and persists what comes out.
//
// Contract (docs/state-machine.md holds the full state x command table, and
// tests/actors/test_sandbox_machine.cpp checks this code against that table):
// - Events from decide carry the next dense sequence numbers (state.sequence + 1, ...),
//   event id "<sandbox id>:<sequence>", the command's tenant (the sandbox's, once created),
//   principal and correlation id, and occurred_at = now.
// - evolve is total: it trusts the log and applies every event; `unknown` payloads and
//   `command_rejected` only advance the sequence. An event whose sequence is not above
//   state.sequence is a duplicate and leaves the state unchanged.
// - Replaying the events decide emitted, from initial_state, reproduces the same state.
// - deleted is terminal: no command emits an event for a deleted sandbox but `redact` and
//   `delete_snapshot` (all others are rejected, except a retried create, which is answered
//   with the deleted sandbox it made); neither changes its status.
#pragma once

#include "events/errc.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sandboxd::actors {

using events::nanoseconds;
using events::time_point;

// A file change logged (file_op_requested) whose outcome is not logged yet.
struct file_op_in_flight {
  std::string op_id;
  events::file_op_kind kind = events::file_op_kind::write;
  bool operator==(const file_op_in_flight&) const = default;
};

// `absent` is the state before `created` (the sandbox does not exist yet).
enum class sandbox_status : std::uint8_t {
  absent,
  creating,
  running,
  pausing,
  paused,
  resuming,
  deleting,
  deleted,
  failed,
  claiming, // a pool sandbox being handed to a tenant (docs/pools.md); appended: snapshots
            // keep statuses as numbers
};

std::string_view to_string(sandbox_status s);

struct sandbox_state {
  std::string sandbox_id;
  std::string tenant;
  sandbox_status status = sandbox_status::absent;
  std::uint64_t sequence = 0; // of the last event applied; 0 before `created`

  events::created spec; // as created; spec.timeouts follows `timeout_changed`, spec.network
                        // `network_changed`
  // The mode being applied (pausing), kept (paused) or restored from (resuming).
  events::pause_mode pause_mode = events::pause_mode::filesystem;

  time_point created_at{};
  time_point status_since{};     // when the current status was entered
  time_point last_activity_at{}; // created, started, resumed, exec, file, snapshot, timeout
  std::vector<std::string>
    execs_in_flight; // cleared when processes end (paused fs, deleted, failed)
  std::vector<file_op_in_flight> file_ops_in_flight; // kept across pauses, until the outcome
  std::uint64_t writable_layer_bytes = 0;            // the latest paused/storage/snapshot figure

  // Set in status failed: the step that failed and why.
  events::runtime_step failed_step = events::runtime_step::creating;
  std::string failure_reason;

  // A `redacted` was applied (deleted only): spec.labels and spec.env are empty since.
  bool redacted = false;

  // Connections opened (connection_opened) and not closed yet; spec.network follows
  // network_changed. Cleared when processes end (paused fs, deleted, failed).
  std::vector<std::string> connections_open;

  bool operator==(const sandbox_state&) const = default;
};

sandbox_state initial_state(std::string sandbox_id);

// A warm pool's sandbox that no tenant has claimed yet (created with a pool key, still of
// events::k_pool_tenant), whatever its status.
bool unclaimed_pool_sandbox(const sandbox_state& s);
// An unclaimed pool sandbox with nothing in flight (no exec, file change or connection): the
// only kind a claim is accepted on (when running).
bool claimable(const sandbox_state& s);

// --- commands -------------------------------------------------------------------------------

namespace cmd {

// User commands.
// `spec.pool` set: a warm pool's sandbox, created by the pool tenant (and only then).
struct create {
  events::created spec;
};
// Hands a claimable pool sandbox to the command's tenant (docs/pools.md): claim_requested,
// then the runtime applies the environment (claiming) and runtime_claimed records it; a claim
// with no environment has nothing to apply (the sandbox's execs see the template's, as they
// do already): claim_requested and claimed at once. Secret env values travel here to the
// driver and are stripped from the event, as create's are.
struct claim {
  events::claim_requested claim;
};
struct pause {
  events::pause_mode mode = events::pause_mode::filesystem;
  events::pause_reason reason = events::pause_reason::user; // recovery uses reason recovery
};
struct resume {};
struct remove {}; // delete
// An exec's intent (exec_started). A secret env value is dropped (its name kept) before it
// is logged (decide does it); its value travels to the driver beside the command.
struct exec {
  std::string exec_id; // unique among the sandbox's execs in flight
  std::vector<std::string> argv;
  std::string working_directory;
  nanoseconds timeout{0}; // 0: none
  std::vector<events::env_var> env;
  std::uint64_t stdin_bytes = 0;
  std::optional<events::sha256_digest> stdin_sha256;
  std::uint64_t max_output_bytes = 0;
  bool background = false;
  std::string user; // "" = root
};
// A read of the sandbox's files (paths absolute, no ".." component). Without `served` it
// asks whether the read may be served now (accepted with no event); with `served` (a
// system command, after the driver answered) it records the read as `file_read`.
template <events::command_kind K>
struct file_query {
  std::string path;
  std::optional<events::file_read> served;
};
using read_file = file_query<events::command_kind::read_file>;
using list_dir = file_query<events::command_kind::list_dir>;
using stat_path = file_query<events::command_kind::stat_path>;
// A change of the sandbox's files: without `finished`, its intent (file_op_requested,
// `op.kind` must match the command); with `finished` (a system command, after the driver
// answered) its outcome (file_op_finished).
template <events::command_kind K>
struct file_change {
  events::file_op_requested op;
  std::optional<events::file_op_finished> finished;
};
using write_file = file_change<events::command_kind::write_file>;
using make_dir = file_change<events::command_kind::make_dir>;
using remove_path = file_change<events::command_kind::remove_path>;
using rename_path = file_change<events::command_kind::rename_path>;
struct kill_exec {
  std::string exec_id;
  std::int32_t signal = 9;
};
struct set_timeout {
  events::sandbox_timeouts timeouts; // the complete new settings
};
// A snapshot of the writable layer (docs/snapshots.md): without `finished`, its intent
// (snapshot_requested; running or paused in either mode); with `finished` (a system command,
// after the driver answered) its outcome (snapshot_taken).
struct snapshot {
  std::string snapshot_id; // snap-<16 hex digits> (runtime::is_snapshot_id)
  std::string op_id;
  std::string name;
  std::optional<events::snapshot_taken> finished;
};
// A snapshot of this sandbox deleted (snapshot_deleted); accepted in every status but absent,
// deleted included: snapshots outlive their sandbox. The API has checked that it exists.
struct delete_snapshot {
  std::string snapshot_id;
};

// Runtime results: the runtime finished (or could not finish) the step in flight.
struct runtime_started {};
struct runtime_paused {
  std::uint64_t writable_layer_bytes = 0;
};
struct runtime_resumed {};
struct runtime_claimed {}; // the claim's environment is applied
// The sandbox is gone; its writable layer measured just before it was removed (0 when it
// could not be: the runtime had no such sandbox any more).
struct runtime_deleted {
  std::uint64_t writable_layer_bytes = 0;
};
struct runtime_failed {
  std::string reason;
  // Recovery compared the runtime with the log and found the sandbox not as the log says
  // (its container gone, its processes ended, another state): also accepted in paused,
  // where no step can fail. The reason says what was found.
  bool at_recovery = false;
};
using exec_finished = events::exec_finished;
using storage_sampled = events::storage_sampled;

// Timer firings. Each is accepted only when its deadline (next_deadlines) has passed.
struct idle_timer {};
struct lifetime_timer {};
struct retention_timer {};
struct timeout_timer {}; // the run time allowed since the last start or resume is over

// Removes a deleted sandbox's private details from the read models (`redacted`); accepted
// once, in status deleted only (a repeat is accepted with no event).
struct redact {
  std::string reason;
};

// The sandbox's egress policy from now on (network/policy.hpp checks its rules; the API has
// checked the tenant's ceiling).
struct set_network {
  events::network_policy network;
};
// An attempt to reach something from the sandbox, as sandboxd's proxy (tcp, udp) or resolver
// (dns) saw it, decided with network::evaluate on the policy in the state: connection_opened
// (the proxy then dials) or connection_denied; an allowed DNS question emits nothing. Only
// while running. `connection_id` (tcp, udp): unique among the sandbox's open connections.
struct open_connection {
  std::string connection_id;
  events::net_destination destination;
};
// An open connection ended (its bytes each way); a close for a connection the sandbox no
// longer has open (a pause or delete ended it) is accepted with no event.
struct close_connection {
  events::connection_closed closed;
};

} // namespace cmd

// The most connections one sandbox holds open at once.
inline constexpr std::size_t k_max_open_connections = 1024;

// In command_kind order (kind_of is the index).
using command_body =
  std::variant<cmd::create, cmd::pause, cmd::resume, cmd::remove, cmd::exec, cmd::read_file,
               cmd::write_file, cmd::set_timeout, cmd::snapshot, cmd::runtime_started,
               cmd::runtime_paused, cmd::runtime_resumed, cmd::runtime_deleted, cmd::runtime_failed,
               cmd::exec_finished, cmd::storage_sampled, cmd::idle_timer, cmd::lifetime_timer,
               cmd::retention_timer, cmd::make_dir, cmd::remove_path, cmd::rename_path,
               cmd::list_dir, cmd::stat_path, cmd::kill_exec, cmd::timeout_timer, cmd::redact,
               cmd::set_network, cmd::open_connection, cmd::close_connection, cmd::claim,
               cmd::runtime_claimed, cmd::delete_snapshot>;

struct command {
  std::string tenant;    // of the caller; becomes the sandbox's tenant on create
  std::string principal; // a user, or "system" for runtime results and timers
  std::string correlation_id;
  std::string causation_id;
  command_body body;
};

events::command_kind kind_of(const command_body& body);

// --- decide and evolve ----------------------------------------------------------------------

struct decision {
  std::variant<std::vector<events::event>, events::error> value;

  bool ok() const { return value.index() == 0; }
  const std::vector<events::event>& emitted() const { return std::get<0>(value); }
  const events::error& failure() const { return std::get<1>(value); }
};

// The events `c` emits in `s` at `now`, or why it is rejected. An accepted command may emit
// no events (create repeated with the same client request id; delete while deleting).
decision decide(const sandbox_state& s, const command& c, time_point now);

// The state after `e`. Throws std::invalid_argument if e.sequence > s.sequence + 1 (a gap:
// the log lost an event, a fault).
sandbox_state evolve(sandbox_state s, const events::event& e);

// evolve in place: `s` becomes the state after `e` (the same state evolve returns), touching
// only the fields `e` changes. For folds over many events (recovery, replay), where moving the
// whole state per event costs more than the event. On a gap it throws before changing `s`.
void apply(sandbox_state& s, const events::event& e);

// --- what the actor layer derives from the state --------------------------------------------

// The instants at which the timers should fire; empty when the timer does not apply:
// idle: running, an idle timeout set and no exec in flight: last activity + idle timeout;
// lifetime: a maximum lifetime set and not deleting/deleted: created + max lifetime;
// retention: paused and a retention set: paused since + retention;
// timeout: running and a timeout set: running since (the last start or resume) + timeout.
struct deadlines {
  std::optional<time_point> idle;
  std::optional<time_point> lifetime;
  std::optional<time_point> retention;
  std::optional<time_point> timeout;
};
deadlines next_deadlines(const sandbox_state& s);

// The runtime step in flight in a transitional status (creating, pausing, resuming,
// deleting, claiming); empty otherwise. After a restart this is what recovery must reconcile.
std::optional<events::runtime_step> step_in_flight(const sandbox_state& s);

// A `command_rejected` event recording `err` for `c`, with the next sequence number; empty
// when the sandbox does not exist (absent) or no longer does (deleted), which has no history
// to append to.
std::optional<events::event> rejection_event(const sandbox_state& s, const command& c,
                                             const events::error& err, time_point now);

} // namespace sandboxd::actors
