// event.hpp — the sandbox lifecycle events as plain C++ values, and their codec.
//
// One `event` is one record of the event log: an envelope (who, when, which sandbox, which
// position in that sandbox's history) and a payload. The wire format is the Cap'n Proto
// `Event` of schemas/events.capnp (docs/event-format.md); this header keeps Cap'n Proto out
// of its includers.
//
// Guarantees of the codec:
// - decode(encode(e)) == e for every event.
// - decode never crashes and never allocates more than a small multiple of the input size,
//   whatever the bytes; bytes that are not an Event decode to an `error`
//   (errc::invalid_argument), not an exception.
// - A payload written by a newer version decodes as `unknown` (with its union ordinal) and
//   the envelope is still read: consumers skip it, but can still track the sequence.
// - Enum values this version does not know are kept as their number (the enums below are
//   "open"); `to_string` shows them as "<type>(<n>)".
#pragma once

#include "base/sha256.hpp"
#include "events/errc.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sandboxd::events {

using nanoseconds = std::chrono::nanoseconds;
// An instant: nanoseconds since the Unix epoch, UTC.
using time_point = std::chrono::sys_time<nanoseconds>;

// The enums mirror schemas/events.capnp value for value.
enum class pause_mode : std::uint16_t { filesystem = 0, memory = 1 };
enum class pause_reason : std::uint16_t { user = 0, idle_timeout = 1, recovery = 2 };
enum class delete_reason : std::uint16_t {
  user = 0,
  lifetime = 1,
  retention = 2,
  idle_timeout = 3
};
enum class idle_action : std::uint16_t { pause_sandbox = 0, delete_sandbox = 1 };
enum class runtime_kind : std::uint16_t { runsc = 0, crun = 1, hollow = 2 };
enum class network_mode : std::uint16_t { none = 0, full = 1, allow_list = 2 };
// The step the runtime could not complete, named after the state it was attempted in.
enum class runtime_step : std::uint16_t {
  creating = 0,
  pausing = 1,
  resuming = 2,
  deleting = 3,
  running = 4,
  claiming = 5, // a pool sandbox's claim (docs/pools.md)
};
enum class command_kind : std::uint16_t {
  create_sandbox = 0,
  pause_sandbox = 1,
  resume_sandbox = 2,
  delete_sandbox = 3,
  exec = 4,
  read_file = 5,
  write_file = 6,
  set_timeout = 7,
  snapshot = 8,
  runtime_started = 9,
  runtime_paused = 10,
  runtime_resumed = 11,
  runtime_deleted = 12,
  runtime_failed = 13,
  exec_finished = 14,
  storage_sampled = 15,
  idle_timer = 16,
  lifetime_timer = 17,
  retention_timer = 18,
  make_dir = 19,
  remove_path = 20,
  rename_path = 21,
  list_dir = 22,
  stat_path = 23,
  kill_exec = 24,
  timeout_timer = 25,
  redact_sandbox = 26,
  set_network = 27,
  open_connection = 28,
  close_connection = 29,
  claim_sandbox = 30,
  runtime_claimed = 31,
  delete_snapshot = 32,
};
// How an operation that reached the runtime ended.
enum class op_outcome : std::uint16_t {
  completed = 0,   // it ran to its end (an exec's exit code, a file change done)
  failed = 1,      // the runtime refused or could not do it (the error says why)
  interrupted = 2, // sandboxd stopped while it ran: whether it took effect is unknown
};
enum class file_op_kind : std::uint16_t {
  write = 0,
  make_dir = 1,
  remove = 2,
  rename = 3,
  snapshot = 4, // a snapshot of the writable layer in flight (snapshot_requested)
};
enum class file_read_kind : std::uint16_t { read = 0, list = 1, stat = 2 };
enum class net_protocol : std::uint16_t { tcp = 0, udp = 1, dns = 2 };
// Where the name of a destination came from.
enum class name_source : std::uint16_t {
  none = 0, // the sandbox dialled an address and named nothing
  tls_sni = 1,
  http_host = 2,
  connect = 3,
  dns_question = 4,
};

std::string to_string(pause_mode v);
std::string to_string(pause_reason v);
std::string to_string(delete_reason v);
std::string to_string(idle_action v);
std::string to_string(runtime_kind v);
std::string to_string(network_mode v);
std::string to_string(runtime_step v);
std::string to_string(command_kind v);
std::string to_string(op_outcome v);
std::string to_string(file_op_kind v);
std::string to_string(file_read_kind v);
std::string to_string(net_protocol v);
std::string to_string(name_source v);

using sandboxd::sha256_digest;

// An environment variable of a sandbox or an exec. A secret's value never reaches the log:
// `value` is empty, and nothing derived from it is kept (an unsalted hash of a short secret
// gives it away). `value_sha256` is only read from records written before that rule.
struct env_var {
  std::string name;
  std::string value;
  bool secret = false;
  std::optional<sha256_digest> value_sha256; // older records' secrets only; never written now
  bool operator==(const env_var&) const = default;
};

struct sandbox_limits {
  std::uint32_t memory_mib = 0;
  std::uint32_t cpu_millicores = 0;
  std::uint32_t pids = 0;
  std::uint32_t disk_mib = 0;
  bool operator==(const sandbox_limits&) const = default;
};

struct network_policy {
  network_mode mode = network_mode::none;
  std::vector<std::string> allowed_hosts; // only for allow_list
  bool operator==(const network_policy&) const = default;
};

struct label {
  std::string key;
  std::string value;
  bool operator==(const label&) const = default;
};

// A duration of zero means "none" (never idle out, unlimited lifetime, keep paused forever).
struct sandbox_timeouts {
  nanoseconds idle_timeout{0};
  idle_action on_idle = idle_action::pause_sandbox;
  pause_mode idle_pause_mode = pause_mode::filesystem; // when on_idle is pause_sandbox
  nanoseconds max_lifetime{0};                         // counted from creation
  nanoseconds paused_retention{0};                     // counted from entering paused
  // Run time allowed from each start or resume; then on_idle applies (delete, or pause).
  nanoseconds timeout{0};
  bool operator==(const sandbox_timeouts&) const = default;
};

// What a sandbox's root filesystem is made of (schemas/events.capnp TemplateRef): the template
// as it was when the sandbox was created. Empty (no id) for a sandbox made before templates
// were events, or on a runtime without files.
struct template_ref {
  std::string id;                      // tpl_<16 hex digits>
  std::optional<sha256_digest> digest; // the template's digest (template_ready::digest)
  std::vector<sha256_digest> layers;   // lowest first
  std::vector<env_var> env;            // the template's environment, below the sandbox's
  std::string working_directory;       // "" = "/"
  std::string user;                    // "" = root
  bool operator==(const template_ref&) const = default;
};

// --- payloads -------------------------------------------------------------------------------

struct created {
  std::string template_name;
  sandbox_limits limits;
  sandbox_timeouts timeouts;
  network_policy network;
  std::vector<label> labels;
  runtime_kind runtime = runtime_kind::runsc;
  std::string client_request_id; // makes create idempotent
  std::vector<env_var> env;      // every exec sees these
  template_ref content;          // the exact template content
  // "": a tenant's own sandbox. Else the key of the warm pool that made it (docs/pools.md):
  // the event's tenant is the pool tenant (k_pool_tenant), until a claim_requested.
  std::string pool;
  std::string from_snapshot; // a fork: the snapshot its writable layer started as
  bool operator==(const created&) const = default;
};

// The tenant of every pool sandbox until it is claimed. No token can name it (tenants are
// [a-z0-9_-]), so no tenant's command reaches an unclaimed pool sandbox but its claim.
inline constexpr std::string_view k_pool_tenant = "@pool";

// A pool sandbox is handed to the event's tenant, principal and correlation id: from this
// event on it is theirs, as if created now. What the claiming create asked for beyond the
// pool's key comes with it; the runtime then applies the environment (status claiming).
struct claim_requested {
  std::vector<label> labels;
  std::vector<env_var> env; // as created's: a secret's value is never logged
  sandbox_timeouts timeouts;
  std::string client_request_id;
  bool operator==(const claim_requested&) const = default;
};

// The runtime applied the claim: the sandbox runs under its new tenant.
struct claimed {
  bool operator==(const claimed&) const = default;
};

struct started {
  bool operator==(const started&) const = default;
};

struct pause_requested {
  pause_mode mode = pause_mode::filesystem;
  pause_reason reason = pause_reason::user;
  bool operator==(const pause_requested&) const = default;
};

struct paused {
  pause_mode mode = pause_mode::filesystem;
  std::uint64_t writable_layer_bytes = 0;
  bool operator==(const paused&) const = default;
};

struct resume_requested {
  bool operator==(const resume_requested&) const = default;
};

struct resumed {
  bool operator==(const resumed&) const = default;
};

struct delete_requested {
  delete_reason reason = delete_reason::user;
  bool operator==(const delete_requested&) const = default;
};

// The sandbox and its writable layer are gone. `writable_layer_bytes` is the layer as the
// runtime measured it just before removing it (what storage billing closes on); 0 when it
// was not measured: the layer was already gone, or the record is older than the field.
struct deleted {
  std::uint64_t writable_layer_bytes = 0;
  bool operator==(const deleted&) const = default;
};

struct failed {
  runtime_step step = runtime_step::creating;
  std::string reason;
  bool operator==(const failed&) const = default;
};

struct exec_started {
  std::string exec_id;
  std::vector<std::string> argv;
  std::string working_directory;
  nanoseconds timeout{0};   // zero: none
  std::vector<env_var> env; // this exec's own variables
  std::uint64_t stdin_bytes = 0;
  std::optional<sha256_digest> stdin_sha256; // none when stdin is streamed or empty
  std::uint64_t max_output_bytes = 0;        // per stream
  bool background = false;
  // Who it runs as, `user[:group]` of the sandbox's /etc/passwd and /etc/group (the
  // request's, else its template's USER); "" = the sandbox's root.
  std::string user;
  bool operator==(const exec_started&) const = default;
};

struct exec_finished {
  std::string exec_id;
  std::int32_t exit_code = 0; // -1 when ended by a signal
  std::int32_t signal = 0;    // 0 when it exited
  nanoseconds duration{0};
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
  bool timed_out = false;
  bool oom_killed = false;
  bool output_truncated = false; // it wrote more than max_output_bytes; the rest was dropped
  // Of the output handed to the caller; none when the exec did not complete.
  std::optional<sha256_digest> stdout_sha256;
  std::optional<sha256_digest> stderr_sha256;
  op_outcome outcome = op_outcome::completed;
  std::optional<error> failure; // outcome failed: why
  bool operator==(const exec_finished&) const = default;
};

struct file_written {
  std::string path;
  std::uint64_t bytes = 0;
  sha256_digest sha256{};
  bool operator==(const file_written&) const = default;
};

// A read of the sandbox's files, logged after it is served, with its outcome.
struct file_read {
  std::string path;
  std::uint64_t bytes = 0; // read: the bytes returned
  file_read_kind kind = file_read_kind::read;
  std::optional<error> failure;
  std::optional<sha256_digest> sha256; // read: of the content returned
  std::uint64_t entries = 0;           // list: the entries returned
  bool operator==(const file_read&) const = default;
};

// A change to the sandbox's files, logged before it reaches the sandbox.
struct file_op_requested {
  std::string op_id; // unique per sandbox; file_op_finished names it
  file_op_kind kind = file_op_kind::write;
  std::string path;
  std::string to_path;     // rename: the new path
  bool recursive = false;  // remove: a directory and its contents; make_dir: parents too
  std::uint32_t mode = 0;  // write, make_dir: permission bits
  std::uint64_t bytes = 0; // write: the content's size
  std::optional<sha256_digest> sha256; // write: of the content
  bool operator==(const file_op_requested&) const = default;
};

struct file_op_finished {
  std::string op_id;
  file_op_kind kind = file_op_kind::write;
  op_outcome outcome = op_outcome::completed;
  std::optional<error> failure;        // outcome failed: why
  std::uint64_t bytes = 0;             // write: as the runtime wrote them
  std::optional<sha256_digest> sha256; // write: of what the runtime wrote
  bool operator==(const file_op_finished&) const = default;
};

struct exec_kill_requested {
  std::string exec_id;
  std::int32_t signal = 9;
  bool operator==(const exec_kill_requested&) const = default;
};

// A deleted sandbox's private details were removed from the read models (the log keeps them).
struct redacted {
  std::string reason; // as the operator gave it
  bool operator==(const redacted&) const = default;
};

// The sandbox's egress policy from now on (docs/network.md).
struct network_changed {
  network_policy network;
  bool operator==(const network_changed&) const = default;
};

// What a sandbox tried to reach, as sandboxd's egress proxy or resolver saw it.
struct net_destination {
  net_protocol protocol = net_protocol::tcp;
  std::string name; // lower-case, no trailing dot; "" when only an address
  name_source source = name_source::none;
  std::string address; // dialled or to be dialled; "" for a DNS question
  std::uint16_t port = 0;
  std::string address_class;  // "public", "private", "link-local", "node", "sandbox", ...
  bool name_resolves = false; // sandboxd's resolver answered `address` for `name`
  bool operator==(const net_destination&) const = default;
};

// Allowed by the policy in force; logged before the proxy dials the destination.
struct connection_opened {
  std::string connection_id; // unique per sandbox; connection_closed names it
  net_destination destination;
  std::string rule; // the rule that allowed it, or "all"
  bool operator==(const connection_opened&) const = default;
};

struct connection_denied {
  net_destination destination;
  std::string reason;
  std::uint32_t repeats = 0; // more denials of the same destination folded into this one
  bool operator==(const connection_denied&) const = default;
};

struct connection_closed {
  std::string connection_id;
  std::uint64_t bytes_out = 0; // sandbox -> destination
  std::uint64_t bytes_in = 0;  // destination -> sandbox
  nanoseconds duration{0};
  // completed; failed (the destination could not be reached: error_message); interrupted
  // (sandboxd stopped meanwhile: the bytes counted until then)
  op_outcome outcome = op_outcome::completed;
  std::string error_message;
  bool operator==(const connection_closed&) const = default;
};

struct storage_sampled {
  std::uint64_t writable_layer_bytes = 0;
  bool operator==(const storage_sampled&) const = default;
};

// The outcome of a snapshot_requested (docs/snapshots.md). Written before snapshots had an
// intent: only the first two fields (op_id empty, completed).
struct snapshot_taken {
  std::string snapshot_id;
  std::uint64_t writable_layer_bytes = 0; // the source layer's referenced bytes
  std::string op_id;
  op_outcome outcome = op_outcome::completed;
  std::optional<error> failure; // outcome failed: why
  std::string name;
  std::uint64_t referenced_bytes = 0; // the snapshot's qgroup counts
  std::uint64_t exclusive_bytes = 0;
  bool operator==(const snapshot_taken&) const = default;
};

// A read-only snapshot of the writable layer, logged before it is taken.
struct snapshot_requested {
  std::string op_id;
  std::string snapshot_id; // snap-<16 hex digits>
  std::string name;
  bool operator==(const snapshot_requested&) const = default;
};

// A snapshot of this sandbox deleted (before its subvolume is); also once the sandbox is.
struct snapshot_deleted {
  std::string snapshot_id;
  bool operator==(const snapshot_deleted&) const = default;
};

struct timeout_changed {
  sandbox_timeouts timeouts; // the complete new settings
  bool operator==(const timeout_changed&) const = default;
};

struct command_rejected {
  command_kind command = command_kind::create_sandbox;
  errc code = errc::conflict;
  std::string message;
  bool operator==(const command_rejected&) const = default;
};

// --- templates (one stream: key and sandbox_id "@templates", docs/templates.md) ------------

// The record key (and sandbox_id) of every template event.
inline constexpr std::string_view template_stream_key = "@templates";

enum class template_scope : std::uint16_t { global = 0, tenant = 1 };
enum class template_source : std::uint16_t { stock = 0, import_archive = 1, spec = 2 };
std::string to_string(template_scope v);
std::string to_string(template_source v);

struct template_created {
  template_source source = template_source::stock;
  std::string description;
  std::optional<sha256_digest> input_sha256; // of the spec, archive or package list
  std::string parent_id;                     // a spec's FROM template; "" for none
  bool operator==(const template_created&) const = default;
};

struct template_layer_added {
  std::uint32_t index = 0; // 0 = the lowest
  sha256_digest sha256{};  // the layer's tree digest
  std::uint64_t bytes = 0;
  std::uint64_t entries = 0;
  std::string origin;
  bool reused = false; // it was in the layer store already
  bool operator==(const template_layer_added&) const = default;
};

struct template_step_started {
  std::uint32_t index = 0;
  std::string instruction;
  std::optional<sha256_digest> cache_key;
  bool operator==(const template_step_started&) const = default;
};

struct template_step_finished {
  std::uint32_t index = 0;
  op_outcome outcome = op_outcome::completed;
  bool cached = false;
  std::int32_t exit_code = 0;
  nanoseconds duration{0};
  std::optional<sha256_digest> layer; // none when the step made no layer
  std::uint64_t output_bytes = 0;
  std::optional<error> failure; // outcome failed: why
  bool operator==(const template_step_finished&) const = default;
};

struct template_layer {
  sha256_digest sha256{};
  std::uint64_t bytes = 0;
  bool operator==(const template_layer&) const = default;
};

struct template_ready {
  sha256_digest digest{};
  std::vector<template_layer> layers; // lowest first
  std::vector<env_var> env;
  std::string working_directory;
  std::string user;
  std::vector<std::string> command;
  std::uint64_t total_bytes = 0;
  // The bytes of its layers that its parent (a spec's FROM) does not have: what its tenant is
  // billed for. None in records written before it: total_bytes counts (billable_bytes()).
  std::optional<std::uint64_t> own_bytes;
  std::uint64_t billable_bytes() const { return own_bytes.value_or(total_bytes); }
  bool operator==(const template_ready&) const = default;
};

struct template_failed {
  error failure{errc::internal, ""};
  bool operator==(const template_failed&) const = default;
};

struct template_deleted {
  std::string reason;
  bool operator==(const template_deleted&) const = default;
};

// A change written by a newer version (its ordinal in TemplateEvent.change).
struct template_unknown {
  std::uint16_t ordinal = 0;
  bool operator==(const template_unknown&) const = default;
};

using template_change =
  std::variant<template_unknown, template_created, template_layer_added, template_step_started,
               template_step_finished, template_ready, template_failed, template_deleted>;

// "created", "layer_added", "step_started", "step_finished", "ready", "failed", "deleted",
// "unknown".
std::string_view change_name(const template_change& c);

struct template_event {
  std::string template_id;
  std::string name;
  template_scope scope = template_scope::global;
  template_change change;
  bool operator==(const template_event&) const = default;
};

// A payload written by a newer version: `ordinal` is its union discriminant (the position in
// the schema's payload union: 0 is created, 16 command_rejected, 19 exec_kill_requested, 20
// redacted, 24 connection_closed, 25 template_event, 26 claim_requested, 27 claimed, 28
// snapshot_requested, 29 snapshot_deleted, 30 the first newer one).
struct unknown {
  std::uint16_t ordinal = 0;
  bool operator==(const unknown&) const = default;
};

using payload =
  std::variant<unknown, created, started, pause_requested, paused, resume_requested, resumed,
               delete_requested, deleted, failed, exec_started, exec_finished, file_written,
               file_read, storage_sampled, snapshot_taken, timeout_changed, command_rejected,
               file_op_requested, file_op_finished, exec_kill_requested, redacted, network_changed,
               connection_opened, connection_denied, connection_closed, template_event,
               claim_requested, claimed, snapshot_requested, snapshot_deleted>;

// The payload's name in snake_case, as docs/state-machine.md and the golden files use it:
// "created", "pause_requested", ..., "unknown".
std::string_view type_name(const payload& p);

// All known payload type names, in schema order (excluding "unknown").
const std::vector<std::string_view>& payload_type_names();

struct event {
  std::string event_id;
  std::string sandbox_id;     // the record key
  std::uint64_t sequence = 0; // per sandbox; 1 for `created`; dense
  std::string tenant;
  std::string principal; // a user, or "system" for timers and runtime results
  time_point occurred_at{};
  std::string correlation_id;
  std::string causation_id;
  payload body;
  bool operator==(const event&) const = default;
};

// --- codec ----------------------------------------------------------------------------------

// The Cap'n Proto encoding of `e` (an unpacked single-segment message with its segment
// table), appended to `out`. Returns the number of bytes appended.
std::size_t encode_to(const event& e, std::string& out);
std::string encode(const event& e);

// What `decode` returns: the event, or why the bytes are not one.
struct decoded {
  std::variant<event, error> value;

  bool ok() const { return value.index() == 0; }
  const event& get() const { return std::get<event>(value); }
  event& get() { return std::get<event>(value); }
  const error& failure() const { return std::get<error>(value); }
};

// Decodes one record. The bytes need no particular alignment.
decoded decode(const void* data, std::size_t size);
inline decoded decode(std::string_view bytes) {
  return decode(bytes.data(), bytes.size());
}

} // namespace sandboxd::events
