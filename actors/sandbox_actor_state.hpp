// sandbox_actor_state.hpp — one sandbox actor's state and the steps that change it, without
// CAF: sandbox_actor.cpp turns each message into one of these calls (and then calls
// after_change), and work finished on other threads (the journal's completions, the pool's
// runtime calls and read-backs) comes back through the actor's mailbox as a message.
// Internal to actors/. docs/actors.md describes the protocol.
//
// Invariants of the state:
// - `s` is the fold of the sandbox's durable events; `pending` is `s` plus the events of the
//   one append in flight (`persisting`) or of the unresolved append, and becomes `s` only
//   when they are durable.
// - At most one lifecycle runtime call is in flight (`call_in_flight`), and it is issued at
//   most once per entry into a transitional status (`issued_for == entered`).
// - A runtime result whose step is no longer the state's step in flight, or whose status
//   was entered again since, is stale: dropped.
// - Rejected system commands (early or stale timers, stale results) are dropped without an
//   event; rejected user commands are recorded as command_rejected (for the audit log) when
//   the sandbox exists.
// - An append whose fate is unknown (`unresolved`) is resolved before anything else is
//   decided: `pending` stays `s` plus its events until find_landed and re-appends of the
//   missing events (identical, same sequence numbers) show all of them in the log. Its
//   sequence numbers are never given to other events.
// - System commands whose append certainly failed wait in `retry` and are decided again
//   after a backoff; no new timer is armed meanwhile (a firing would only fail again).
#pragma once

#include "actors/actor_context.hpp"
#include "actors/append_resolution.hpp"
#include "actors/request.hpp"
#include "actors/runtime_steps.hpp"
#include "actors/sandbox_machine.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::actors {

// How work finished on another thread reaches the actor: each call becomes a message that
// the actor handles on its own thread. Safe to call from any thread, also after the actor
// stopped (the message is then dropped).
class sandbox_mailbox {
public:
  virtual ~sandbox_mailbox() = default;
  virtual void appended(events::append_result r) const = 0; // the journal's completion
  virtual void result(runtime_result r) const = 0;          // a runtime call returned
  virtual void landed(landed_result r) const = 0;           // a read-back finished
};

// A command decided into the append in flight, and the state right after its own events.
struct reply_to {
  std::shared_ptr<request> req;
  std::optional<events::error> failure;
  sandbox_state after;
};

// An append whose fate is unknown, being resolved from the log.
struct unresolved_append {
  std::vector<events::event> events; // the append, in order; pending = s + these
  std::vector<reply_to> replies;     // answered at resolution unless `answered`
  std::int64_t from = 0;             // the records, if stored, are at this offset or later
  bool answered = false;             // the callers were told the outcome is unknown
  bool reading = false;              // find_landed runs on the pool
  bool redriving = false;            // the missing events are being appended again
  bool redriven = false;             // ... and that append was acknowledged
};

// Retries after a failed append start at k_backoff_min and double up to k_backoff_max.
inline constexpr std::chrono::milliseconds k_backoff_min{10};
inline constexpr std::chrono::milliseconds k_backoff_max{2000};

struct sandbox_actor_state {
  actor_context* ctx = nullptr;
  std::shared_ptr<const sandbox_mailbox> mail;
  std::string id;
  std::int32_t partition = 0;
  sandbox_state s;
  sandbox_state pending;
  std::vector<std::int64_t> offsets;   // of the events folded into `s`, in sequence order
  std::optional<events::error> broken; // the history is in doubt: every command is refused

  std::deque<std::shared_ptr<request>> queue;
  bool persisting = false;
  std::vector<reply_to> batch_replies;
  std::vector<events::event> batch_events;
  std::int64_t batch_from = 0; // where the append in flight lands, at the earliest
  std::vector<std::shared_ptr<request>> settling;
  std::optional<unresolved_append> unresolved;
  std::vector<std::shared_ptr<request>> retry; // system commands whose append failed
  std::chrono::milliseconds backoff{0};
  bool wakeup_pending = false;

  std::optional<events::runtime_step> call_in_flight;
  std::uint64_t entered = 0;    // sequence of the event that entered the current status
  std::uint64_t issued_for = 0; // `entered` when the current step's call was issued
  std::uint64_t execs_running = 0;
  std::uint64_t ops_running = 0; // file operations and kills on the pool
  exec_table execs;
  secret_values secrets; // of the create this actor took (never logged)
  bool sampling = false;
  std::array<std::optional<events::time_point>, k_timer_kinds> armed;
  events::time_point sample_due{};
  std::uint64_t received = 0; // messages the directory forwarded and this actor took
  // Passivation: when the actor last did anything, and whether a check is scheduled.
  std::chrono::steady_clock::time_point last_busy = std::chrono::steady_clock::now();
  bool check_pending = false;

  static inline const char* name = "sandbox_actor";
};

// --- deciding and persisting (sandbox_persist.cpp) ------------------------------------------

bool is_system(const command& c);
// Answers `req` (if anyone waits) with `s`, a state the caller hands over, or `failure`.
void reply(sandbox_state&& s, const std::shared_ptr<request>& req,
           std::optional<events::error> failure);
// Answers `req` with the durable state, or `failure`.
void reply(sandbox_actor_state& st, const std::shared_ptr<request>& req,
           std::optional<events::error> failure);
std::shared_ptr<request> system_request(const sandbox_state& s, command_body body);
// What a settled reply waiting for a step's outcome is told when that outcome could not be
// recorded yet (the command's own events are durable); fail_settling answers every settled reply
// waiting so.
events::error not_settled(const sandbox_actor_state& st, const std::string& cause);
void fail_settling(sandbox_actor_state& st, const events::error& err);
// Decides the queued commands against `pending` and appends their events, unless an append
// is in flight or unresolved.
void pump(sandbox_actor_state& st);
// Hands `records` to the journal; its completion comes back as sandbox_mailbox::appended.
void append_records(sandbox_actor_state& st, std::vector<events::log_record> records);
void on_appended(sandbox_actor_state& st, events::append_result& result);
// The append of `evs` (answering `replies`) is durable at `offsets`: fold, reply, act.
void apply_durable(sandbox_actor_state& st, const std::vector<events::event>& evs,
                   std::vector<reply_to>& replies, const std::vector<std::int64_t>& offsets);
// A retry's backoff is over: the kept system commands are decided again, the unresolved
// append tried again.
void on_retry(sandbox_actor_state& st);

// --- an append whose fate is unknown (sandbox_unknown_append.cpp) ---------------------------

void begin_unresolved(sandbox_actor_state& st, std::vector<events::event> evs,
                      std::vector<reply_to> replies);
void on_redriven(sandbox_actor_state& st, events::append_result& result);
void on_landed(sandbox_actor_state& st, landed_result& r);
void retry_unresolved(sandbox_actor_state& st);
// The sandbox's history is in doubt (another writer's record among its events, or events
// the log acknowledged and does not return): every command is refused from now on.
void go_broken(sandbox_actor_state& st, const std::string& why);

// --- the runtime (sandbox_steps.cpp) --------------------------------------------------------

void start_step(sandbox_actor_state& st);
runtime::driver* driver_of(const sandbox_actor_state& st);
// The intent of `req`'s operation is durable (or the read admitted): its driver call starts.
void launch_op(sandbox_actor_state& st, const std::shared_ptr<request>& req);
// An exec accepted without an operation (a plain cmd::exec): run in the background.
void start_exec(sandbox_actor_state& st, const events::exec_started& e);
void start_sample(sandbox_actor_state& st);
void on_result(sandbox_actor_state& st, runtime_result& r);

// --- timers and wake-ups (sandbox_timers.cpp) -----------------------------------------------

bool passivatable(const sandbox_actor_state& st);
void arm_timers(sandbox_actor_state& st);
void on_timer(sandbox_actor_state& st, timer_kind kind, events::time_point deadline);
// Asks the wake-up queue for a passivation check after `wait` (CAF's delayed_send is not
// used: its 0.17 clock thread crashed here under many pending delayed messages).
void schedule_idle_check(sandbox_actor_state& st, std::chrono::steady_clock::duration wait);
// Asks for a retry after the next backoff (once: one wake-up serves every retry).
void schedule_retry(sandbox_actor_state& st);

} // namespace sandboxd::actors
