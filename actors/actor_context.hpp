// actor_context.hpp — what the sandbox actors and the directory share, and the messages
// between them. Internal to actors/: only the actor translation units include it (it
// pulls in CAF).
//
// Messages (all local; the unsafe types never leave the process and are never persisted):
//   directory <- (cmd_atom, request_ptr)                  a command from control_plane
//   directory <- (timer_atom, id, kind, deadline_ns)      from the timer queue
//   directory <- (passive_atom, id, received, offsets)    an idle actor offers to passivate
//   directory <- (stats_atom, stats_ptr)                  control_plane::stats
//   actor     <- (cmd_atom, request_ptr) | (timer_atom, kind, deadline_ns)  via directory
//   actor     <- (appended_atom, append_ptr)              the journal completed its append
//   actor     <- (result_atom, result_ptr)                the pool finished a runtime call
//   actor     <- (landed_atom, landed_ptr)                the pool read back an append whose
//                                                         fate is unknown
//   directory <- (idle_atom, id)                          a passivation check is due
//   actor     <- (idle_atom)                              via directory: passivate if idle
//   directory <- (retry_atom, id)                         a retry's backoff is over
//   actor     <- (retry_atom)                             via directory: retry now
//   actor     <- (stop_atom)                              the directory accepted passivation
#pragma once

#include "actors/append_resolution.hpp"
#include "actors/blocking_pool.hpp"
#include "actors/control_plane.hpp"
#include "actors/journal.hpp"
#include "actors/timer_queue.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::actors {

using cmd_atom = caf::atom_constant<caf::atom("sbcmd")>;
using timer_atom = caf::atom_constant<caf::atom("sbtimer")>;
using passive_atom = caf::atom_constant<caf::atom("sbpassive")>;
using stats_atom = caf::atom_constant<caf::atom("sbstats")>;
using appended_atom = caf::atom_constant<caf::atom("sbappended")>;
using result_atom = caf::atom_constant<caf::atom("sbresult")>;
using idle_atom = caf::atom_constant<caf::atom("sbidle")>;
using stop_atom = caf::atom_constant<caf::atom("sbstop")>;
using landed_atom = caf::atom_constant<caf::atom("sblanded")>;
using retry_atom = caf::atom_constant<caf::atom("sbretry")>;

struct request {
  std::string sandbox_id;
  command cmd;
  reply_when when = reply_when::settled;
  reply_fn done;
  bool query = false; // answer with the durable state; decide nothing
  // A runtime step's result: the step, and the sequence of the event that entered the
  // status it was issued for. Stale (dropped) once the sandbox has moved on.
  std::optional<events::runtime_step> step;
  std::uint64_t entered = 0;
  std::uint64_t own_sequence = 0; // of the command's own last event, once decided
};
struct request_ptr {
  std::shared_ptr<request> value;
};

struct append_ptr {
  std::shared_ptr<events::append_result> value;
};

// A runtime call finished: `body` reports it. `step` is the lifecycle step it was for
// (nullopt for exec and storage samples, which are not lifecycle steps).
struct runtime_result {
  std::optional<events::runtime_step> step;
  command_body body;
};
struct result_ptr {
  std::shared_ptr<runtime_result> value;
};

// What a read-back of an append whose fate is unknown found (`fault`: another writer).
struct landed_result {
  landed_events landed;
  std::optional<std::string> fault;
};
struct landed_ptr {
  std::shared_ptr<landed_result> value;
};

struct offsets_ptr {
  std::shared_ptr<std::vector<std::int64_t>> value;
};

struct stats_ptr {
  std::shared_ptr<std::function<void(directory_stats)>> value;
};

// The services every actor uses. Lives in control_plane::impl, outlives every actor.
struct actor_context {
  events::event_log* log = nullptr;
  runtime::driver* driver = nullptr;
  bool driver_never_blocks = false; // lifecycle steps and samples run on the actor's thread
  journal* journal_ = nullptr;
  blocking_pool* pool = nullptr;
  timer_queue* timers = nullptr;
  // On the system clock, whatever `clock` is: passivation checks (timer_kind::idle) and
  // retries after a backoff (timer_kind::retry).
  timer_queue* wakeups = nullptr;
  clock_fn clock;
  std::chrono::milliseconds passivate_after{5000};
  events::nanoseconds sample_interval{0};
  std::atomic<std::uint64_t> next_id{0};
};

// Spawns the actor of `sandbox_id`, its state rebuilt from the events at `offsets` of its
// partition (none: a new sandbox). `due` are the deadlines already in the timer queue.
caf::actor spawn_sandbox_actor(caf::local_actor* parent, actor_context* ctx, caf::actor directory,
                               std::string sandbox_id, std::vector<std::int64_t> offsets,
                               bool timers_scheduled);

struct directory_seed {
  std::vector<recovered_entry> sandboxes;
};

caf::actor spawn_sandbox_directory(caf::actor_system& sys, actor_context* ctx,
                                   std::shared_ptr<directory_seed> seed);

} // namespace sandboxd::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::append_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::result_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::landed_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::offsets_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::stats_ptr)
