// control_plane.hpp — the actor system of one node, behind a header with no CAF in it:
// what the RPC layer, the daemon, tests and benchmarks call.
//
// Construction recovers (recovery.hpp): every sandbox of the log is known and none is in
// a transitional state before the first command is taken. Then every command goes to the
// sandbox's actor (sandbox_directory finds or reactivates it), which decides with the pure
// state machine and persists the events through the journal.
//
// Guarantees:
// - Persist, then reply: a reply that carries no failure is sent only after the command's
//   events are durable in the log, and a runtime step starts only after the event that
//   asks for it is durable. A failed append yields a failure reply (errc::unavailable) and
//   no runtime step.
// - Commands for one sandbox are decided one at a time, in arrival order; at most one
//   runtime lifecycle step per sandbox is in flight. While a step is in flight the state
//   machine (docs/state-machine.md) answers other commands.
// - A create whose tenant and client request id repeat an earlier create is answered with
//   the sandbox that create made (also after a restart).
// - Timers (idle, lifetime, retention, storage sampling) are derived from state and
//   survive restarts. Blocking driver calls run on a dedicated pool, never on CAF threads
//   (only a driver that never blocks, `driver_never_blocks`, is called on them).
// - `reply_fn` runs on an actor's thread: it must be quick and must not block.
#pragma once

#include "actors/recovery.hpp"
#include "actors/sandbox_machine.hpp"
#include "actors/timer_queue.hpp"
#include "events/event_log.hpp"
#include "runtime/driver.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace sandboxd::actors {

// When the reply comes: once the command's own events are durable, or once the sandbox
// has also settled (no runtime step in flight; the step's outcome is durable too).
enum class reply_when { durable, settled };

struct command_reply {
  std::optional<events::error> failure;
  sandbox_state state; // after the command (and, for settled, its step); valid when ok
  bool ok() const { return !failure.has_value(); }
};
using reply_fn = std::function<void(command_reply)>;

struct control_plane_options {
  events::event_log* log = nullptr; // not owned; outlives the control plane
  runtime::driver* driver = nullptr;
  std::string data_dir;              // snapshots go to <data_dir>/snapshots
  clock_fn clock;                    // empty: the system clock
  std::size_t runtime_threads = 8;   // the blocking pool
  std::size_t scheduler_threads = 0; // CAF's; 0: CAF's default
  // The driver's lifecycle calls and usage() are quick in-memory changes that never block
  // (runtime::driver::never_blocks(): the hollow driver without latency or sync, for
  // benchmarks and tests). Lifecycle steps and storage samples then run on the sandbox
  // actor's own thread instead of the blocking pool (two thread hand-offs fewer per step);
  // exec still runs on the pool. Refused (invalid argument) for a driver that can block.
  bool driver_never_blocks = false;
  std::chrono::milliseconds timer_poll{1000}; // how often timers look at a manual clock
  // An idle paused, deleted (or absent) sandbox's actor is passivated after this long.
  std::chrono::milliseconds passivate_after{5000};
  // Running and paused sandboxes get a storage_sampled event this often (and at pause).
  events::nanoseconds storage_sample_interval = std::chrono::minutes(10);
  // A background snapshot is taken whenever this many records were appended since the
  // last one; 0 disables them (snapshot_now still works).
  std::uint64_t snapshot_every_records = 500000;
};

struct directory_stats {
  std::size_t active = 0;            // sandboxes with a live actor
  std::size_t dormant = 0;           // passivated sandboxes (offsets only)
  std::size_t timers = 0;            // entries in the timer queue
  std::uint64_t journal_rounds = 0;  // log appends the journal issued so far
  std::uint64_t journal_records = 0; // records those appends made durable
};

class control_plane {
public:
  // Recovers, then starts the actors. Throws on faults (a damaged log, a runtime that
  // cannot be listed).
  explicit control_plane(control_plane_options options);
  // Stops taking commands, lets appends in flight complete, stops every actor.
  ~control_plane();
  control_plane(const control_plane&) = delete;
  control_plane& operator=(const control_plane&) = delete;

  // Sends `c` to sandbox `sandbox_id`. For a create, an empty id lets the directory choose
  // one (the reply's state names it).
  void submit(std::string sandbox_id, command c, reply_when when, reply_fn done);

  // submit, and wait for the reply.
  command_reply call(std::string sandbox_id, command c, reply_when when = reply_when::settled);

  // The sandbox's durable state, as the caller's tenant sees it (not_found otherwise).
  // A query: it decides nothing and appends nothing.
  command_reply get(std::string sandbox_id, std::string tenant);
  // get, answered through `done` (on an actor's thread, like submit's replies).
  void query(std::string sandbox_id, std::string tenant, reply_fn done);

  const recovery_report& recovery() const;
  directory_stats stats();
  // Brings every partition's snapshot up to the log's end now. Returns records replayed.
  std::uint64_t snapshot_now();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::actors
