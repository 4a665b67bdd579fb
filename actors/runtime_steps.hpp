// runtime_steps.hpp — one runtime step of a sandbox, carried out against a driver and
// turned into the command that reports it to the state machine.
//
// run_step blocks (it calls the driver): call it only from the blocking pool or from
// recovery, never on a CAF scheduler thread. It is idempotent, so recovery can use it to
// finish a step a crash interrupted: a step whose target the runtime already reached
// (the sandbox exists, is already paused, already running, already gone) succeeds.
//
// A crash in the middle of the runtime's own calls can leave states the runtime will not
// step out of by itself; run_step covers the two the crash loop (with crun) finds:
// a creating sandbox whose start was cut short is removed and made afresh (nothing ran in
// it yet), and a sandbox whose filesystem pause was cut short (its processes gone, the
// runtime calling it stopped) is started and paused again.
//
//   creating  create + start  -> runtime_started  | runtime_failed
//   pausing   pause + usage   -> runtime_paused   | runtime_failed
//   resuming  resume          -> runtime_resumed  | runtime_failed
//   deleting  remove          -> runtime_deleted  | runtime_failed
#pragma once

#include "actors/sandbox_machine.hpp"
#include "runtime/driver.hpp"

#include <optional>

namespace sandboxd::actors {

// A runtime call finished: `body` reports it. `step` is the lifecycle step it was for
// (nullopt for exec and storage samples, which are not lifecycle steps).
struct runtime_result {
  std::optional<events::runtime_step> step;
  command_body body;
};

command_body run_step(runtime::driver& d, const sandbox_state& s, events::runtime_step step);

// The runtime's create request for a sandbox's spec.
runtime::create_request create_request_of(const sandbox_state& s);

// A command from the system (runtime results, timers): principal "system", the sandbox's
// tenant.
command system_command(const sandbox_state& s, command_body body);

} // namespace sandboxd::actors
