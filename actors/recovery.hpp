// recovery.hpp — start-up: rebuild every sandbox from snapshots and the log, then
// reconcile what was in flight with what the runtime really has.
//
// Guarantees when recover() returns:
// - Every sandbox of the log is known, with the offsets of its events (what reactivation
//   reads) and its timers' deadlines, derived from its state.
// - No sandbox is in a transitional state (creating, pausing, resuming, deleting): the
//   step that a crash interrupted was carried out again (run_step is idempotent) and its
//   outcome — finished or failed — was appended to the log as events.
// - No exec and no file change is in flight: each one a crash interrupted got its outcome
//   event, `interrupted` (never success: whether it took effect is unknown).
// - A sandbox running or paused in the log whose runtime does not hold it in that state (no
//   runtime sandbox, its processes ended, another state) got a `failed` event (step
//   `running`) saying what was found. A kind with no driver here is not compared.
// - Every runtime sandbox that no live sandbox owns (unknown to the log, or deleted) was
//   removed and is named in the report.
// Blocking: call it before the actor system takes commands, never on a CAF thread.
#pragma once

#include "actors/sandbox_machine.hpp"
#include "events/event_log.hpp"
#include "runtime/driver.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sandboxd::actors {

struct recovered_entry {
  std::string sandbox_id;
  sandbox_status status = sandbox_status::absent;
  std::vector<std::int64_t> offsets;
  deadlines due;
  std::string idempotency_key; // empty without a client request id
  std::string template_id;     // the template its root filesystem is made of (created.content)
  std::string pool;            // an unclaimed pool sandbox's pool key (docs/pools.md); else ""
};

struct recovery_report {
  std::uint64_t sandboxes = 0;
  std::uint64_t from_snapshot = 0;   // sandboxes whose state came from a snapshot
  std::uint64_t events_replayed = 0; // log records read after the snapshots
  std::vector<std::string> finished; // transitional sandboxes whose step was completed
  std::vector<std::string> failed;   // transitional sandboxes whose step failed
  std::vector<std::string> orphans_removed;
  // Sandboxes with execs or file changes in flight, each recorded as interrupted.
  std::vector<std::string> interrupted;
  // Running or paused sandboxes the runtime disagreed with (no container, processes ended,
  // another state), each recorded as failed with what was found.
  std::vector<std::string> disagreed;
  double seconds = 0;
  double replay_seconds = 0;       // snapshots loaded and tails replayed (all partitions)
  double runtime_list_seconds = 0; // driver.list(), which runs during the replay
};

struct recovery_outcome {
  std::vector<recovered_entry> sandboxes;
  recovery_report report;
};

// The node's drivers: by runtime kind, or `fallback` for every kind when `by_kind` is empty.
struct recovery_drivers {
  std::map<events::runtime_kind, runtime::driver*> by_kind;
  runtime::driver* fallback = nullptr;
  runtime::driver* for_kind(events::runtime_kind kind) const;
  std::vector<runtime::driver*> all() const;
};

// A sandbox whose runtime kind has no driver here gets a failed step; every driver's
// sandboxes are listed and its orphans removed.
recovery_outcome recover(events::event_log& log, const recovery_drivers& drivers,
                         const std::string& snapshot_dir, events::time_point now);
recovery_outcome recover(events::event_log& log, runtime::driver& driver,
                         const std::string& snapshot_dir, events::time_point now);

// The key of the idempotent-create index: a client request id is unique per tenant.
std::string idempotency_key(const std::string& tenant, const std::string& client_request_id);

} // namespace sandboxd::actors
