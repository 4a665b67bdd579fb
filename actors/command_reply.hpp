// command_reply.hpp — what a caller of the control plane gets back for a command, and when:
// the vocabulary the control plane's callers and the actors that answer them share.
#pragma once

#include "actors/sandbox_machine.hpp"

#include <cstdint>
#include <functional>
#include <optional>

namespace sandboxd::actors {

// When the reply comes: once the command's own events are durable, or once the sandbox
// has also settled (no runtime step in flight; the step's outcome is durable too).
enum class reply_when { durable, settled };

struct command_reply {
  std::optional<events::error> failure;
  sandbox_state state; // after the command (and, for settled, its step); valid when ok
  // The sequence number of the command's own last event (valid when ok); 0 when it was
  // accepted without one (a retried create, a delete while deleting).
  std::uint64_t own_sequence = 0;
  bool ok() const { return !failure.has_value(); }
};
using reply_fn = std::function<void(command_reply)>;

} // namespace sandboxd::actors
