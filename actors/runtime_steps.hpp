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
//   deleting  usage + remove  -> runtime_deleted  | runtime_failed
//   claiming  set_env         -> runtime_claimed  | runtime_failed
#pragma once

#include "actors/sandbox_machine.hpp"
#include "runtime/driver.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace sandboxd::actors {

// A runtime call finished: `body` reports it. `step` is the lifecycle step it was for
// (nullopt for exec and storage samples, which are not lifecycle steps).
struct operation;
struct runtime_result {
  std::optional<events::runtime_step> step;
  command_body body;
  // An operation's driver call (body unused): the operation and what the call produced.
  std::shared_ptr<operation> op;
  std::optional<command_body> op_record;
  std::optional<events::error> op_failure;
};

// The values of a sandbox's secret env variables by name (the log holds only their names):
// known to the actor that took the create, lost in a restart.
using secret_values = std::map<std::string, std::string>;

// A create step of a sandbox with secret env variables whose values are not in `secrets`
// fails (the values cannot be recovered from the log).
command_body run_step(runtime::driver& d, const sandbox_state& s, events::runtime_step step,
                      const secret_values& secrets = {});

// The environment every exec of the sandbox sees: the template's, then the sandbox's own
// (created's, or its claim's) over it, secret values from `secrets`; empty when a secret's
// value is missing there.
std::optional<std::vector<std::pair<std::string, std::string>>>
environment_of(const sandbox_state& s, const secret_values& secrets = {});

// The runtime's create request for a sandbox's spec (secret values from `secrets`); empty
// when a secret's value is missing there.
std::optional<runtime::create_request> create_request_of(const sandbox_state& s,
                                                         const secret_values& secrets = {});

// A command from the system (runtime results, timers): principal "system", the sandbox's
// tenant.
command system_command(const sandbox_state& s, command_body body);

} // namespace sandboxd::actors
