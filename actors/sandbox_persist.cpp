// sandbox_persist.cpp — how a sandbox actor decides its queued commands and persists them:
// one append at a time through the journal, replies once it is durable, system commands
// whose append certainly failed kept for a retry (sandbox_actor_state.hpp).
#include "actors/sandbox_actor_state.hpp"

#include "actors/runtime_steps.hpp"

namespace sandboxd::actors {
namespace {

// A runtime result that no longer fits: its step is not the one in flight, or the status
// was entered again since the step was issued.
bool stale(const sandbox_actor_state& st, const request& r) {
  return r.step && (step_in_flight(st.pending) != r.step || st.entered != r.entered);
}

// A decided command's events are durable (or it emitted none): answer it, hold it until the
// sandbox settles, or start its operation's driver call.
void conclude(sandbox_actor_state& st, reply_to& r) {
  if (r.req->op && !r.failure && !r.req->outcome) {
    launch_op(st, r.req);
    return;
  }
  if (!r.failure && r.req->when == reply_when::settled && step_in_flight(st.s))
    st.settling.push_back(r.req);
  else
    reply(std::move(r.after), r.req, std::move(r.failure));
}

// The secret values of a create (or a claim) about to be decided: kept for the runtime's
// create (or the claim's environment) only.
void keep_secrets(sandbox_actor_state& st, const command& c) {
  const std::vector<events::env_var>* env = nullptr;
  if (const auto* x = std::get_if<cmd::create>(&c.body);
      x && st.pending.status == sandbox_status::absent)
    env = &x->spec.env;
  else if (const auto* y = std::get_if<cmd::claim>(&c.body);
           y && claimable(st.pending) && st.pending.status == sandbox_status::running)
    env = &y->claim.env;
  if (!env)
    return;
  st.secrets.clear();
  for (const auto& v : *env)
    if (v.secret && !v.value.empty())
      st.secrets[v.name] = v.value;
}

// A user command of another tenant than the sandbox's: answered not_found before the machine
// sees it. A claim is the one command an unclaimed pool sandbox takes from a tenant.
bool foreign(const sandbox_state& s, const command& c) {
  if (is_system(c) || s.status == sandbox_status::absent || c.tenant == s.tenant)
    return false;
  return !(std::holds_alternative<cmd::claim>(c.body) && unclaimed_pool_sandbox(s));
}

} // namespace

bool is_system(const command& c) {
  return c.principal == "system";
}

void reply(sandbox_state&& s, const std::shared_ptr<request>& req,
           std::optional<events::error> failure) {
  if (req->op) {
    const auto seq = failure ? 0 : req->own_sequence;
    req->op->answer(std::move(failure), seq);
    return;
  }
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

void reply(sandbox_actor_state& st, const std::shared_ptr<request>& req,
           std::optional<events::error> failure) {
  if (!req->done && !req->op)
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

void apply_durable(sandbox_actor_state& st, const std::vector<events::event>& evs,
                   std::vector<reply_to>& replies, const std::vector<std::int64_t>& offsets) {
  st.backoff = std::chrono::milliseconds(0);
  const auto before = st.s.status;
  st.s = std::move(st.pending);
  st.pending = st.s;
  if (st.s.status != before)
    st.entered = st.s.sequence;
  st.offsets.insert(st.offsets.end(), offsets.begin(), offsets.end());
  for (const auto& e : evs) {
    if (auto* x = std::get_if<events::exec_started>(&e.body))
      st.execs.started(*x);
    if (auto* x = std::get_if<events::exec_finished>(&e.body))
      st.execs.finished(*x, e.sequence);
    if (std::holds_alternative<events::storage_sampled>(e.body))
      st.sample_due = e.occurred_at + st.ctx->sample_interval;
    if (st.ctx->template_use && !st.s.spec.content.id.empty()) {
      if (std::holds_alternative<events::created>(e.body))
        st.ctx->template_use(st.id, st.s.spec.content.id, true);
      else if (std::holds_alternative<events::deleted>(e.body))
        st.ctx->template_use(st.id, st.s.spec.content.id, false);
    }
  }
  // Execs whose processes a filesystem pause, a delete or a failure ended.
  st.execs.forget_except(
    st.s.execs_in_flight,
    events::make_error(events::errc::conflict,
                       "sandbox " + st.id + " is " + std::string(to_string(st.s.status)) +
                         ": its processes ended before the exec's result was recorded"));
  for (auto& r : replies) {
    // A plain exec (no operation): answered at exec_started, run in the background.
    if (!r.failure && !r.req->op)
      if (auto* x = std::get_if<cmd::exec>(&r.req->cmd.body))
        for (const auto& e : evs)
          if (auto* started = std::get_if<events::exec_started>(&e.body);
              started && started->exec_id == x->exec_id)
            start_exec(st, *started);
    conclude(st, r);
  }
}

void append_records(sandbox_actor_state& st, std::vector<events::log_record> records) {
  st.persisting = true;
  st.ctx->journal_->append(std::move(records), [mail = st.mail](events::append_result r) {
    mail->appended(std::move(r));
  });
}

void on_appended(sandbox_actor_state& st, events::append_result& result) {
  st.persisting = false;
  if (st.unresolved && st.unresolved->redriving) {
    on_redriven(st, result);
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
    apply_durable(st, evs, replies, offsets);
    pump(st);
    return;
  }
  if (result.maybe_stored) {
    begin_unresolved(st, std::move(evs), std::move(replies));
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
  pump(st);
}

void on_retry(sandbox_actor_state& st) {
  st.wakeup_pending = false;
  for (auto it = st.retry.rbegin(); it != st.retry.rend(); ++it)
    st.queue.push_front(std::move(*it));
  st.retry.clear();
  retry_unresolved(st);
  pump(st);
}

void pump(sandbox_actor_state& st) {
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
    if (foreign(st.pending, c)) {
      reply(st, req,
            events::make_error(events::errc::not_found,
                               "sandbox " + st.id + " does not exist; check the sandbox id"));
      continue;
    }
    if (stale(st, *req))
      continue;
    keep_secrets(st, c);
    auto d = decide(st.pending, c, now);
    if (!d.ok()) {
      if (is_system(c)) {
        if (req->op) // an operation's outcome the sandbox no longer takes
          req->op->answer(d.failure(), 0);
        continue;
      }
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
      r.after = st.s; // accepted without events: the durable state is the answer
      conclude(st, r);
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
  append_records(st, std::move(records));
}
} // namespace sandboxd::actors
