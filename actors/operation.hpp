// operation.hpp — an operation on a sandbox's processes or files riding on its request: what
// the pool does with the driver once the operation's intent is durable (or, for a read, once
// the state machine admitted it), and how its caller is answered. Internal to actors/.
//
// Order of events for one operation (sandbox_steps.cpp, sandbox_persist.cpp):
//   intent durable (exec_started / file_op_requested / exec_kill_requested; a read: admitted)
//   -> `run` on the pool (the driver call; an exec's output goes to its sink there)
//   -> its outcome recorded (exec_finished / file_op_finished / file_read), a system command
//   -> durable: `answer`. A failure before that (rejected, log down) is answered at once.
#pragma once

#include "actors/exec_table.hpp"
#include "actors/sandbox_machine.hpp"
#include "runtime/driver.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace sandboxd::actors {

// What the driver call produced: the outcome to record (then answer), or, with nothing to
// record, the answer itself (`failure`, or success).
struct op_step {
  std::optional<command_body> record;
  std::optional<events::error> failure;
};

struct operation {
  // On the pool: the driver call for sandbox `id`.
  std::function<op_step(runtime::driver& d, const std::string& id)> run;
  // Answers the caller: the failure, or success with the outcome's sequence (on the actor's
  // thread, or on the pool for an answer with nothing to record).
  std::function<void(std::optional<events::error> failure, std::uint64_t sequence)> answer;
  // A background exec: answered once its exec_started is durable, before `run` starts.
  std::function<void(std::optional<events::error> failure, std::uint64_t sequence)> started;
  // A query of the execs (list, wait): runs on the actor's thread instead; nothing is decided.
  std::function<void(exec_table& execs)> inspect;
  bool is_exec = false;
  // Set when `run` is started: what the outcome's event carries.
  std::string correlation_id;
  std::string causation_id; // the intent's event id
  // The outcome recorded, once `run` returned one (read by `answer`).
  std::optional<command_body> outcome;
};

// The operation of an exec, run as `request` (which carries what the log does not: secret
// values, stdin, the output sink). Its outcome is the exec_finished; it answers nobody.
std::shared_ptr<operation> exec_operation(runtime::exec_request request);

} // namespace sandboxd::actors
