// request.hpp — a command on its way to its sandbox's actor, with whoever waits for the
// answer: what control_plane::submit makes, the directory routes and the actor decides.
#pragma once

#include "actors/command_reply.hpp"
#include "actors/operation.hpp"
#include "actors/sandbox_machine.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace sandboxd::actors {

struct request {
  std::string sandbox_id;
  command cmd;
  reply_when when = reply_when::settled;
  reply_fn done;      // empty for system commands: nobody waits
  bool query = false; // answer with the durable state; decide nothing
  // A runtime step's result: the step, and the sequence of the event that entered the
  // status it was issued for. Stale (dropped) once the sandbox has moved on.
  std::optional<events::runtime_step> step;
  std::uint64_t entered = 0;
  std::uint64_t own_sequence = 0; // of the command's own last event, once decided
  // An operation on processes or files (operation.hpp): answered through it, not `done`.
  std::shared_ptr<operation> op;
  bool outcome = false; // the command records the operation's outcome (answer once durable)
};

} // namespace sandboxd::actors
