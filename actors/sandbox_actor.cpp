// sandbox_actor — one actor per sandbox: decide with the pure state machine, persist through
// the journal, then reply and act on the runtime. See control_plane.hpp for the guarantees
// and docs/actors.md for the protocol.
//
// Invariants of the actor's state:
// - `s` is the fold of the sandbox's durable events; `pending_` is `s` plus the events of
//   the one append in flight (persisting_), applied only when that append succeeds.
// - At most one lifecycle runtime call is in flight (call_in_flight_), and it is issued at
//   most once per entry into a transitional status (issued_for_ == entered_).
// - A runtime result whose step is no longer the state's step in flight is stale: dropped.
// - Rejected system commands (early or stale timers, stale results) are dropped without an
//   event; rejected user commands are recorded as command_rejected (for the audit log) when
//   the sandbox exists.
// - An append whose fate is unknown (`unresolved`) is resolved before anything else is
//   decided: `pending` stays `s` plus its events until find_landed and re-appends of the
//   missing events (identical, same sequence numbers) show all of them in the log. Its
//   sequence numbers are never given to other events.
// - System commands whose append certainly failed wait in `retry` and are decided again
//   after a backoff; no new timer is armed meanwhile (a firing would only fail again).
#include "actors/actor_context.hpp"
#include "actors/runtime_steps.hpp"

#include <array>
#include <deque>
#include <iostream>

namespace sandboxd::actors {
namespace {

using std::chrono::duration_cast;

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
constexpr std::chrono::milliseconds k_backoff_min{10};
constexpr std::chrono::milliseconds k_backoff_max{2000};

struct sandbox_actor_state {
  actor_context* ctx = nullptr;
  caf::actor directory;
  std::string id;
  std::int32_t partition = 0;
  sandbox_state s;
  sandbox_state pending;
  std::vector<std::int64_t> offsets;
  std::optional<events::error> broken; // the history could not be read back

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
  bool sampling = false;
  std::array<std::optional<events::time_point>, k_timer_kinds> armed;
  events::time_point sample_due{};
  std::uint64_t received = 0;
  // Passivation: when the actor last did anything, and whether a check is scheduled.
  std::chrono::steady_clock::time_point last_busy = std::chrono::steady_clock::now();
  bool check_pending = false;

  static inline const char* name = "sandbox_actor";
};

using actor_t = caf::stateful_actor<sandbox_actor_state>;

bool is_system(const command& c) {
  return c.principal == "system";
}

// Answers `req` (if anyone waits) with `s`, a state the caller hands over, or `failure`.
void reply(sandbox_state&& s, const std::shared_ptr<request>& req,
           std::optional<events::error> failure) {
  if (!req->done)
    return;
  command_reply r;
  r.failure = std::move(failure);
  if (!r.failure) {
    r.state = std::move(s);
    r.own_sequence = req->own_sequence;
  }
  req->done(std::move(r));
}

// Answers `req` with the durable state.
void reply(sandbox_actor_state& st, const std::shared_ptr<request>& req,
           std::optional<events::error> failure) {
  if (!req->done)
    return;
  const bool failed = failure.has_value();
  reply(failed ? sandbox_state{} : sandbox_state(st.s), req, std::move(failure));
}

std::shared_ptr<request> system_request(const sandbox_state& s, command_body body) {
  auto r = std::make_shared<request>();
  r->sandbox_id = s.sandbox_id;
  r->cmd = system_command(s, std::move(body));
  return r;
}

bool passivatable(const sandbox_actor_state& st) {
  const auto status = st.s.status;
  const bool idle_status = status == sandbox_status::paused || status == sandbox_status::deleted ||
                           status == sandbox_status::absent || status == sandbox_status::failed;
  return idle_status && st.queue.empty() && !st.persisting && !st.call_in_flight &&
         st.execs_running == 0 && !st.sampling && st.settling.empty() && !st.broken &&
         !st.unresolved && st.retry.empty();
}

void arm_timers(actor_t* self) {
  auto& st = self->state;
  if (st.unresolved || !st.retry.empty())
    return; // a firing could not be recorded now; armed again once the log takes appends
  const auto d = next_deadlines(st.s);
  std::array<std::optional<events::time_point>, k_timer_kinds> want{d.idle, d.lifetime, d.retention,
                                                                    std::nullopt};
  if (st.ctx->sample_interval.count() > 0 &&
      (st.s.status == sandbox_status::running || st.s.status == sandbox_status::paused))
    want[static_cast<std::size_t>(timer_kind::sample)] = st.sample_due;
  for (std::size_t k = 0; k < k_timer_kinds; ++k)
    if (want[k] && want[k] != st.armed[k]) {
      st.ctx->timers->schedule(*want[k], st.id, static_cast<timer_kind>(k));
      st.armed[k] = want[k];
    }
}

void on_result(actor_t* self, runtime_result& r);

void start_step(actor_t* self) {
  auto& st = self->state;
  auto step = step_in_flight(st.s);
  if (!step || st.call_in_flight || st.issued_for == st.entered)
    return;
  st.issued_for = st.entered;
  st.call_in_flight = step;
  if (st.ctx->driver_never_blocks) {
    // The step's result is handled as if it had come back from the pool at once.
    runtime_result r{step, run_step(*st.ctx->driver, st.s, *step)};
    on_result(self, r);
    return;
  }
  auto me = caf::actor_cast<caf::actor>(self);
  st.ctx->pool->post([ctx = st.ctx, me, snapshot = st.s, step = *step] {
    auto body = run_step(*ctx->driver, snapshot, step);
    caf::anon_send(me, result_atom::value,
                   result_ptr{std::make_shared<runtime_result>(runtime_result{step, body})});
  });
}

void start_exec(actor_t* self, const events::exec_started& e) {
  auto& st = self->state;
  ++st.execs_running;
  auto me = caf::actor_cast<caf::actor>(self);
  st.ctx->pool->post([ctx = st.ctx, me, id = st.id, e] {
    runtime::exec_request r;
    r.argv = e.argv;
    if (!e.working_directory.empty())
      r.cwd = e.working_directory;
    if (e.timeout.count() > 0)
      r.timeout = duration_cast<std::chrono::milliseconds>(e.timeout);
    const auto began = std::chrono::steady_clock::now();
    auto res = ctx->driver->exec(id, r);
    cmd::exec_finished f;
    f.exec_id = e.exec_id;
    f.duration = std::chrono::steady_clock::now() - began;
    if (res) {
      f.exit_code = res->exit_code;
      f.signal = res->signal;
      f.timed_out = res->timed_out;
      f.stdout_bytes = res->stdout_data.size();
      f.stderr_bytes = res->stderr_data.size();
    } else {
      f.exit_code = -1;
    }
    caf::anon_send(me, result_atom::value,
                   result_ptr{std::make_shared<runtime_result>(runtime_result{std::nullopt, f})});
  });
}

// A storage sample of sandbox `id` (a runtime_failed marker when it could not be taken).
runtime_result take_sample(runtime::driver& d, const std::string& id) {
  auto u = d.usage(id);
  if (!u)
    return {std::nullopt, cmd::runtime_failed{}}; // marker: dropped by on_result
  return {std::nullopt, cmd::storage_sampled{u->writable_bytes}};
}

void start_sample(actor_t* self) {
  auto& st = self->state;
  if (st.sampling)
    return;
  st.sampling = true;
  if (st.ctx->driver_never_blocks) {
    auto r = take_sample(*st.ctx->driver, st.id);
    on_result(self, r);
    return;
  }
  auto me = caf::actor_cast<caf::actor>(self);
  st.ctx->pool->post([ctx = st.ctx, me, id = st.id] {
    caf::anon_send(me, result_atom::value,
                   result_ptr{std::make_shared<runtime_result>(take_sample(*ctx->driver, id))});
  });
}

// Asks the passivation queue for a check after `wait` (CAF's delayed_send is not used: its
// 0.17 clock thread crashed here under many pending delayed messages).
void schedule_idle_check(sandbox_actor_state& st, std::chrono::steady_clock::duration wait) {
  if (st.check_pending || !passivatable(st))
    return;
  st.check_pending = true;
  const auto now =
    std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
  st.ctx->wakeups->schedule(now + duration_cast<events::nanoseconds>(wait), st.id,
                            timer_kind::idle);
}

// Asks for a retry_atom after the next backoff (once: one wake-up serves every retry).
void schedule_retry(sandbox_actor_state& st) {
  if (st.wakeup_pending)
    return;
  st.backoff = st.backoff.count() == 0 ? k_backoff_min : std::min(st.backoff * 2, k_backoff_max);
  st.wakeup_pending = true;
  const auto now =
    std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
  st.ctx->wakeups->schedule(now + duration_cast<events::nanoseconds>(st.backoff), st.id,
                            timer_kind::retry);
}

void after_change(actor_t* self) {
  auto& st = self->state;
  if (!step_in_flight(st.s) && !st.settling.empty()) {
    auto waiting = std::move(st.settling);
    st.settling.clear();
    for (auto& r : waiting)
      reply(st, r, std::nullopt);
  }
  start_step(self);
  arm_timers(self);
  schedule_idle_check(st, st.ctx->passivate_after);
}

void pump(actor_t* self);

// What a caller whose command is in an append of unknown fate is told when the log could
// not settle it at once.
events::error outcome_unknown(const sandbox_actor_state& st, const std::string& cause) {
  return events::make_error(
    events::errc::unavailable,
    "the outcome of the command on sandbox " + st.id +
      " is unknown: the log did not confirm its events (" + cause +
      "); sandboxd keeps appending them until the log takes them — get the sandbox to see "
      "whether the command took effect before you repeat it");
}

// What a settled reply waiting for a step's outcome is told when that outcome could not be
// recorded yet (the command's own events are durable).
events::error not_settled(const sandbox_actor_state& st, const std::string& cause) {
  return events::make_error(
    events::errc::unavailable,
    "sandbox " + st.id +
      ": the command is recorded, but the outcome of its runtime step could not be recorded "
      "yet (" +
      cause + "); sandboxd keeps recording it — get the sandbox later to see its state");
}

void fail_settling(sandbox_actor_state& st, const events::error& err) {
  auto waiting = std::move(st.settling);
  st.settling.clear();
  for (auto& r : waiting)
    reply(st, r, err);
}

// The append of `evs` (answering `replies`) is durable at `offsets`: fold, reply, act.
void apply_durable(actor_t* self, const std::vector<events::event>& evs,
                   std::vector<reply_to>& replies, const std::vector<std::int64_t>& offsets) {
  auto& st = self->state;
  st.backoff = std::chrono::milliseconds(0);
  const auto before = st.s.status;
  st.s = std::move(st.pending);
  st.pending = st.s;
  if (st.s.status != before)
    st.entered = st.s.sequence;
  st.offsets.insert(st.offsets.end(), offsets.begin(), offsets.end());
  for (const auto& e : evs) {
    if (auto* x = std::get_if<events::exec_started>(&e.body))
      start_exec(self, *x);
    if (std::holds_alternative<events::storage_sampled>(e.body))
      st.sample_due = e.occurred_at + st.ctx->sample_interval;
  }
  for (auto& r : replies) {
    if (!r.failure && r.req->when == reply_when::settled && step_in_flight(st.s))
      st.settling.push_back(r.req);
    else
      reply(std::move(r.after), r.req, std::move(r.failure));
  }
}

// The sandbox's history is in doubt (another writer's record among its events, or events
// the log acknowledged and does not return): every command is refused from now on.
void go_broken(actor_t* self, const std::string& why) {
  auto& st = self->state;
  st.broken = events::make_error(events::errc::unavailable, why + "; check the log and restart");
  std::cerr << "sandboxd: " << st.broken->message << "\n";
  if (st.unresolved && !st.unresolved->answered)
    for (auto& r : st.unresolved->replies)
      reply(st, r.req, st.broken);
  st.unresolved.reset();
  st.retry.clear();
  fail_settling(st, *st.broken);
  st.pending = st.s;
}

// Reads the partition back for the unresolved append's events, on the pool.
void read_back(actor_t* self) {
  auto& st = self->state;
  auto& u = *st.unresolved;
  u.reading = true;
  auto me = caf::actor_cast<caf::actor>(self);
  st.ctx->pool->post([log = st.ctx->log, me, partition = st.partition, from = u.from, id = st.id,
                      applied = st.s.sequence, evs = u.events] {
    auto out = std::make_shared<landed_result>();
    try {
      out->landed = find_landed(*log, partition, from, id, applied, evs);
    } catch (const std::exception& e) {
      out->fault = e.what();
    }
    caf::anon_send(me, landed_atom::value, landed_ptr{std::move(out)});
  });
}

void append_records(actor_t* self, std::vector<events::log_record> records) {
  auto& st = self->state;
  st.persisting = true;
  auto me = caf::actor_cast<caf::actor>(self);
  st.ctx->journal_->append(std::move(records), [me](events::append_result r) {
    caf::anon_send(me, appended_atom::value,
                   append_ptr{std::make_shared<events::append_result>(std::move(r))});
  });
}

// One attempt to settle the unresolved append failed (the log is still down): its callers
// learn that the outcome is unknown; the next attempt comes after a backoff.
void attempt_failed(actor_t* self, const std::string& cause) {
  auto& st = self->state;
  auto& u = *st.unresolved;
  u.redriven = false;
  if (!u.answered) {
    const auto err = outcome_unknown(st, cause);
    for (auto& r : u.replies)
      reply(st, r.req, err);
    u.replies.clear();
    u.answered = true;
    fail_settling(st, not_settled(st, cause));
  }
  schedule_retry(st);
  pump(self);
}

void on_landed(actor_t* self, landed_result& r) {
  auto& st = self->state;
  if (!st.unresolved)
    return;
  auto& u = *st.unresolved;
  u.reading = false;
  if (r.fault) {
    go_broken(self, *r.fault);
    pump(self);
    return;
  }
  if (r.landed.failure) {
    attempt_failed(self, r.landed.failure->message);
    return;
  }
  const auto& found = r.landed.offsets;
  if (found.size() == u.events.size()) {
    auto settled = std::move(u);
    st.unresolved.reset();
    apply_durable(self, settled.events, settled.replies, found);
    pump(self);
    return;
  }
  if (u.redriven) {
    go_broken(self, "the events " + std::to_string(st.s.sequence + found.size() + 1) + " to " +
                      std::to_string(st.s.sequence + u.events.size()) + " of sandbox " + st.id +
                      " were acknowledged by " + st.ctx->log->describe() +
                      " but cannot be read back from partition " + std::to_string(st.partition));
    pump(self);
    return;
  }
  // Append what is missing again, identical: a copy that lands after the first one is a
  // duplicate that every reader drops by its sequence number.
  std::vector<events::log_record> records;
  for (std::size_t i = found.size(); i < u.events.size(); ++i)
    records.push_back({st.id, events::encode(u.events[i])});
  u.redriving = true;
  append_records(self, std::move(records));
}

void on_appended(actor_t* self, events::append_result& result) {
  auto& st = self->state;
  st.persisting = false;
  if (st.unresolved && st.unresolved->redriving) {
    auto& u = *st.unresolved;
    u.redriving = false;
    if (!result.ok()) {
      attempt_failed(self, result.failure->message);
      return;
    }
    u.redriven = true;
    read_back(self); // for the first copy of each event, and to be sure nothing else is there
    return;
  }
  auto replies = std::move(st.batch_replies);
  auto evs = std::move(st.batch_events);
  st.batch_replies.clear();
  st.batch_events.clear();
  if (result.ok()) {
    std::vector<std::int64_t> offsets;
    offsets.reserve(result.positions.size());
    for (const auto& p : result.positions)
      offsets.push_back(p.offset);
    apply_durable(self, evs, replies, offsets);
    pump(self);
    return;
  }
  if (result.maybe_stored) {
    unresolved_append u;
    u.events = std::move(evs);
    u.replies = std::move(replies);
    u.from = st.batch_from;
    st.unresolved = std::move(u);
    read_back(self);
    return;
  }
  // Certainly not stored: user commands are answered, system commands are decided again.
  st.pending = st.s;
  const events::error err{events::errc::unavailable,
                          "the events of sandbox " + st.id + " could not be made durable (" +
                            result.failure->message +
                            "); nothing was changed, retry when the log is back"};
  bool step_result = false;
  for (auto& r : replies) {
    if (is_system(r.req->cmd)) {
      step_result = step_result || r.req->step.has_value();
      st.retry.push_back(std::move(r.req));
    } else {
      reply(st, r.req, err);
    }
  }
  if (step_result)
    fail_settling(st, not_settled(st, result.failure->message));
  if (!st.retry.empty())
    schedule_retry(st);
  pump(self);
}

void on_retry(actor_t* self) {
  auto& st = self->state;
  st.wakeup_pending = false;
  for (auto it = st.retry.rbegin(); it != st.retry.rend(); ++it)
    st.queue.push_front(std::move(*it));
  st.retry.clear();
  if (st.unresolved && !st.unresolved->reading && !st.unresolved->redriving)
    read_back(self);
  pump(self);
}

// A runtime result that no longer fits: its step is not the one in flight, or the status
// was entered again since the step was issued.
bool stale(const sandbox_actor_state& st, const request& r) {
  return r.step && (step_in_flight(st.pending) != r.step || st.entered != r.entered);
}

void pump(actor_t* self) {
  auto& st = self->state;
  if (st.persisting) {
    return;
  }
  if (st.broken) {
    while (!st.queue.empty()) {
      reply(st, st.queue.front(), st.broken);
      st.queue.pop_front();
    }
    return;
  }
  if (st.unresolved) {
    // Nothing is decided before the unresolved append is. Once its callers were told its
    // outcome is unknown, later user commands are refused rather than left waiting.
    if (!st.unresolved->answered)
      return;
    const auto err = events::make_error(
      events::errc::unavailable,
      "sandbox " + st.id +
        ": the outcome of an earlier command is not known yet (the log did not confirm its "
        "events); nothing was changed by this one — retry when the log is back");
    std::deque<std::shared_ptr<request>> kept;
    for (auto& r : st.queue)
      if (is_system(r->cmd))
        kept.push_back(std::move(r));
      else
        reply(st, r, err);
    st.queue = std::move(kept);
    return;
  }
  const auto now = st.ctx->clock();
  std::vector<events::event> evs;
  constexpr std::size_t k_max_batch = 64;
  while (!st.queue.empty() && evs.size() < k_max_batch) {
    auto req = std::move(st.queue.front());
    st.queue.pop_front();
    const auto& c = req->cmd;
    if (!is_system(c) && st.pending.status != sandbox_status::absent &&
        c.tenant != st.pending.tenant) {
      reply(st, req,
            events::make_error(events::errc::not_found,
                               "sandbox " + st.id + " does not exist; check the sandbox id"));
      continue;
    }
    if (stale(st, *req))
      continue;
    auto d = decide(st.pending, c, now);
    if (!d.ok()) {
      if (is_system(c))
        continue;
      if (auto rej = rejection_event(st.pending, c, d.failure(), now)) {
        st.pending = evolve(std::move(st.pending), *rej);
        req->own_sequence = st.pending.sequence;
        evs.push_back(std::move(*rej));
        st.batch_replies.push_back({std::move(req), d.failure(), {}});
      } else {
        reply(st, req, d.failure());
      }
      continue;
    }
    for (const auto& e : d.emitted()) {
      st.pending = evolve(std::move(st.pending), e);
      evs.push_back(e);
    }
    req->own_sequence = d.emitted().empty() ? 0 : st.pending.sequence;
    st.batch_replies.push_back({std::move(req), std::nullopt, st.pending});
  }
  if (evs.empty()) {
    // Accepted without events (a retried create): nothing to persist.
    auto replies = std::move(st.batch_replies);
    st.batch_replies.clear();
    for (auto& r : replies) {
      if (!r.failure && r.req->when == reply_when::settled && step_in_flight(st.s))
        st.settling.push_back(r.req);
      else
        reply(st, r.req, r.failure);
    }
    return;
  }
  std::vector<events::log_record> records;
  records.reserve(evs.size());
  for (const auto& e : evs)
    records.push_back({st.id, events::encode(e)});
  st.batch_events = std::move(evs);
  // Read before the append is issued: the batch can only land at this offset or later.
  st.batch_from = st.ctx->journal_->acknowledged_end(st.partition);
  append_records(self, std::move(records));
}

void on_result(actor_t* self, runtime_result& r) {
  auto& st = self->state;
  if (r.step) {
    st.call_in_flight.reset();
    if (step_in_flight(st.s) != r.step) {
      return; // stale: the sandbox moved on (e.g. a delete overtook a pause)
    }
    if (auto* p = std::get_if<cmd::runtime_paused>(&r.body))
      st.queue.push_front(system_request(st.s, cmd::storage_sampled{p->writable_layer_bytes}));
    auto req = system_request(st.s, std::move(r.body));
    req->step = r.step;
    req->entered = st.entered;
    st.queue.push_front(std::move(req));
  } else if (std::holds_alternative<cmd::exec_finished>(r.body)) {
    --st.execs_running;
    st.queue.push_front(system_request(st.s, std::move(r.body)));
  } else {
    st.sampling = false;
    st.sample_due = st.ctx->clock() + st.ctx->sample_interval;
    if (std::holds_alternative<cmd::storage_sampled>(r.body))
      st.queue.push_front(system_request(st.s, std::move(r.body)));
  }
  pump(self);
}

void on_timer(actor_t* self, timer_kind kind, events::time_point deadline) {
  auto& st = self->state;
  if (static_cast<std::size_t>(kind) >= k_timer_kinds)
    return; // not a state timer
  auto& armed = st.armed[static_cast<std::size_t>(kind)];
  if (armed != deadline)
    return; // stale: a later deadline replaced it
  armed.reset();
  switch (kind) {
  case timer_kind::sample:
    st.sample_due = st.ctx->clock() + st.ctx->sample_interval;
    if (st.s.status == sandbox_status::running || st.s.status == sandbox_status::paused)
      start_sample(self);
    break;
  case timer_kind::idle:
    st.queue.push_back(system_request(st.s, cmd::idle_timer{}));
    break;
  case timer_kind::lifetime:
    st.queue.push_back(system_request(st.s, cmd::lifetime_timer{}));
    break;
  case timer_kind::retention:
    st.queue.push_back(system_request(st.s, cmd::retention_timer{}));
    break;
  case timer_kind::retry:
    break;
  }
  pump(self);
}

// Rebuilds the state from the events at `offsets` (contiguous runs are read together; a
// read may return fewer records than asked for — kafka_log returns what one fetch brought —
// so a run is read until it is complete or a read returns nothing).
void load_history(sandbox_actor_state& st) {
  auto& log = *st.ctx->log;
  std::size_t i = 0;
  while (i < st.offsets.size()) {
    std::size_t j = i + 1;
    while (j < st.offsets.size() && st.offsets[j] == st.offsets[j - 1] + 1)
      ++j;
    while (i < j) {
      auto rr = log.read(st.partition, st.offsets[i], j - i);
      if (!rr.ok() || rr.records.empty())
        throw std::runtime_error(
          "cannot read the history of sandbox " + st.id + " from " + log.describe() +
          " at offset " + std::to_string(st.offsets[i]) +
          (rr.ok() ? std::string(": records missing") : ": " + rr.failure->message));
      for (const auto& rec : rr.records) {
        auto d = events::decode(rec.value);
        if (rec.offset != st.offsets[i] || !d.ok() || d.get().sandbox_id != st.id)
          throw std::runtime_error("record at partition " + std::to_string(rec.partition) +
                                   " offset " + std::to_string(rec.offset) +
                                   " is not the event of sandbox " + st.id + " expected there");
        st.s = evolve(std::move(st.s), d.get());
        if (++i == j)
          break;
      }
    }
  }
}

caf::behavior sandbox_actor(actor_t* self, actor_context* ctx, caf::actor directory, std::string id,
                            std::vector<std::int64_t> offsets, bool timers_scheduled) {
  auto& st = self->state;
  st.ctx = ctx;
  st.directory = std::move(directory);
  st.id = id;
  st.partition = ctx->log->partition_for(id);
  st.s = initial_state(id);
  st.offsets = std::move(offsets);
  try {
    load_history(st);
  } catch (const std::exception& e) {
    st.broken = events::make_error(events::errc::unavailable,
                                   std::string(e.what()) + "; check the log and restart");
    std::cerr << "sandboxd: " << st.broken->message << "\n";
  }
  st.pending = st.s;
  st.entered = st.s.sequence;
  st.issued_for = step_in_flight(st.s) ? 0 : st.entered;
  st.sample_due = ctx->clock() + ctx->sample_interval;
  if (timers_scheduled) {
    // The timer queue already holds the deadlines derived from this state.
    const auto d = next_deadlines(st.s);
    st.armed = {d.idle, d.lifetime, d.retention, std::nullopt};
  }
  self->set_default_handler(caf::drop);
  self->set_error_handler([](caf::error&) {});
  after_change(self);
  return {
    [=](cmd_atom, request_ptr& r) {
      auto& st = self->state;
      ++st.received;
      st.last_busy = std::chrono::steady_clock::now();
      if (r.value->query) {
        if (st.s.status == sandbox_status::absent || st.s.tenant != r.value->cmd.tenant)
          reply(st, r.value,
                events::make_error(events::errc::not_found,
                                   "sandbox " + st.id + " does not exist; check the sandbox id"));
        else
          reply(st, r.value, std::nullopt);
        after_change(self);
        return;
      }
      st.queue.push_back(std::move(r.value));
      pump(self);
      after_change(self);
    },
    [=](timer_atom, std::uint8_t kind, std::int64_t deadline_ns) {
      ++self->state.received;
      self->state.last_busy = std::chrono::steady_clock::now();
      on_timer(self, static_cast<timer_kind>(kind),
               events::time_point(events::nanoseconds(deadline_ns)));
      after_change(self);
    },
    [=](appended_atom, append_ptr& r) {
      self->state.last_busy = std::chrono::steady_clock::now();
      on_appended(self, *r.value);
      after_change(self);
    },
    [=](result_atom, result_ptr& r) {
      self->state.last_busy = std::chrono::steady_clock::now();
      on_result(self, *r.value);
      after_change(self);
    },
    [=](landed_atom, landed_ptr& r) {
      self->state.last_busy = std::chrono::steady_clock::now();
      on_landed(self, *r.value);
      after_change(self);
    },
    [=](retry_atom) {
      ++self->state.received; // forwarded by the directory
      self->state.last_busy = std::chrono::steady_clock::now();
      on_retry(self);
      after_change(self);
    },
    [=](idle_atom) {
      auto& st = self->state;
      ++st.received; // forwarded by the directory, like commands and timer firings
      st.check_pending = false;
      if (!passivatable(st))
        return;
      const auto idle = std::chrono::steady_clock::now() - st.last_busy;
      if (idle < st.ctx->passivate_after) {
        schedule_idle_check(st, st.ctx->passivate_after - idle);
        return;
      }
      self->send(st.directory, passive_atom::value, st.id, st.received,
                 offsets_ptr{std::make_shared<std::vector<std::int64_t>>(st.offsets)});
    },
    [=](stop_atom) { self->quit(); },
  };
}

} // namespace

caf::actor spawn_sandbox_actor(caf::local_actor* parent, actor_context* ctx, caf::actor directory,
                               std::string sandbox_id, std::vector<std::int64_t> offsets,
                               bool timers_scheduled) {
  return parent->spawn(sandbox_actor, ctx, std::move(directory), std::move(sandbox_id),
                       std::move(offsets), timers_scheduled);
}

} // namespace sandboxd::actors
