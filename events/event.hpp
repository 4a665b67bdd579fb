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

#include "events/errc.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
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
};

std::string to_string(pause_mode v);
std::string to_string(pause_reason v);
std::string to_string(delete_reason v);
std::string to_string(idle_action v);
std::string to_string(runtime_kind v);
std::string to_string(network_mode v);
std::string to_string(runtime_step v);
std::string to_string(command_kind v);

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
  bool operator==(const sandbox_timeouts&) const = default;
};

using sha256_digest = std::array<std::uint8_t, 32>;

// --- payloads -------------------------------------------------------------------------------

struct created {
  std::string template_name;
  sandbox_limits limits;
  sandbox_timeouts timeouts;
  network_policy network;
  std::vector<label> labels;
  runtime_kind runtime = runtime_kind::runsc;
  std::string client_request_id; // makes create idempotent
  bool operator==(const created&) const = default;
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

struct deleted {
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
  nanoseconds timeout{0}; // zero: none
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
  bool operator==(const exec_finished&) const = default;
};

struct file_written {
  std::string path;
  std::uint64_t bytes = 0;
  sha256_digest sha256{};
  bool operator==(const file_written&) const = default;
};

struct file_read {
  std::string path;
  std::uint64_t bytes = 0;
  bool operator==(const file_read&) const = default;
};

struct storage_sampled {
  std::uint64_t writable_layer_bytes = 0;
  bool operator==(const storage_sampled&) const = default;
};

struct snapshot_taken {
  std::string snapshot_id;
  std::uint64_t writable_layer_bytes = 0;
  bool operator==(const snapshot_taken&) const = default;
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

// A payload written by a newer version: `ordinal` is its union discriminant (the position in
// the schema's payload union: 0 is created, 16 command_rejected, 17 the first newer one).
struct unknown {
  std::uint16_t ordinal = 0;
  bool operator==(const unknown&) const = default;
};

using payload =
  std::variant<unknown, created, started, pause_requested, paused, resume_requested, resumed,
               delete_requested, deleted, failed, exec_started, exec_finished, file_written,
               file_read, storage_sampled, snapshot_taken, timeout_changed, command_rejected>;

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
