// op_result.hpp — the answer to an operation on a sandbox's processes or files, as the
// control plane's callers and the actors that answer them share it.
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <functional>
#include <optional>

namespace sandboxd::actors {

// The answer to an operation: a failure (the state machine's or the driver's code and
// message), or the value. `own_sequence` is the sequence of the operation's last event.
template <class T>
struct op_result {
  std::optional<events::error> failure;
  T value{};
  std::uint64_t own_sequence = 0;
  bool ok() const { return !failure.has_value(); }
};
template <class T>
using op_done = std::function<void(op_result<T>)>;

} // namespace sandboxd::actors
