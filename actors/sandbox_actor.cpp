// sandbox_actor.cpp — the CAF shell of a sandbox actor: rebuilds the state from the log when
// spawned, turns each message into a step of sandbox_actor_state.hpp, posts work finished on
// other threads back to itself as messages, and offers passivation to the directory.
#include "actors/sandbox_actor.hpp"

#include "actors/sandbox_actor_state.hpp"

#include <stdexcept>

namespace sandboxd::actors {
namespace {

using actor_t = sandbox_actor_handle::stateful_pointer<sandbox_actor_state>;

class actor_mailbox final : public sandbox_mailbox {
public:
  explicit actor_mailbox(sandbox_actor_handle me) : me_(std::move(me)) {}
  void appended(events::append_result r) const override {
    caf::anon_send(me_, appended_atom::value,
                   append_ptr{std::make_shared<events::append_result>(std::move(r))});
  }
  void result(runtime_result r) const override {
    caf::anon_send(me_, result_atom::value,
                   result_ptr{std::make_shared<runtime_result>(std::move(r))});
  }
  void landed(landed_result r) const override {
    caf::anon_send(me_, landed_atom::value,
                   landed_ptr{std::make_shared<landed_result>(std::move(r))});
  }

private:
  sandbox_actor_handle me_; // released with the state when the actor stops
};

// What follows from the state after every message: settled replies answered, the step the
// status asks for started, timers armed, a passivation check asked for.
void after_change(sandbox_actor_state& st) {
  if (!step_in_flight(st.s) && !st.settling.empty()) {
    auto waiting = std::move(st.settling);
    st.settling.clear();
    for (auto& r : waiting)
      reply(st, r, std::nullopt);
  }
  start_step(st);
  arm_timers(st);
  schedule_idle_check(st, st.ctx->passivate_after);
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

// Every message: the actor was busy now; `forwarded` ones came through the directory, which
// counts what it forwarded (passivation needs both counts equal).
template <class Fn>
void handle(actor_t self, bool forwarded, Fn&& fn) {
  auto& st = self->state;
  st.received += forwarded;
  st.last_busy = std::chrono::steady_clock::now();
  fn(st);
  after_change(st);
}

// The directory asked whether this actor may go: offer it when it has been idle long enough.
void check_idle(actor_t self, const directory_handle& directory) {
  auto& st = self->state;
  ++st.received;
  st.check_pending = false;
  if (!passivatable(st))
    return;
  const auto idle = std::chrono::steady_clock::now() - st.last_busy;
  if (idle < st.ctx->passivate_after) {
    schedule_idle_check(st, st.ctx->passivate_after - idle);
    return;
  }
  self->send(directory, passive_atom::value, st.id, st.received,
             offsets_ptr{std::make_shared<std::vector<std::int64_t>>(st.offsets)});
}

void answer_query(sandbox_actor_state& st, const std::shared_ptr<request>& r) {
  if (st.s.status == sandbox_status::absent || st.s.tenant != r->cmd.tenant)
    reply(st, r,
          events::make_error(events::errc::not_found,
                             "sandbox " + st.id + " does not exist; check the sandbox id"));
  else if (r->op && r->op->inspect)
    r->op->inspect(st.execs);
  else
    reply(st, r, std::nullopt);
}

sandbox_actor_handle::behavior_type sandbox_actor(actor_t self, actor_context* ctx,
                                                  directory_handle directory, std::string id,
                                                  std::vector<std::int64_t> offsets,
                                                  bool timers_scheduled) {
  auto& st = self->state;
  st.ctx = ctx;
  st.mail = std::make_shared<actor_mailbox>(caf::actor_cast<sandbox_actor_handle>(self));
  st.id = id;
  st.partition = ctx->log->partition_for(id);
  st.s = initial_state(id);
  st.offsets = std::move(offsets);
  try {
    load_history(st);
  } catch (const std::exception& e) {
    go_broken(st, e.what());
  }
  st.pending = st.s;
  st.entered = st.s.sequence;
  st.issued_for = step_in_flight(st.s) ? 0 : st.entered;
  st.sample_due = ctx->clock() + ctx->sample_interval;
  if (timers_scheduled) {
    // The timer queue already holds the deadlines derived from this state.
    const auto d = next_deadlines(st.s);
    st.armed = {d.idle, d.lifetime, d.retention, std::nullopt, d.timeout};
  }
  self->set_default_handler(caf::drop);
  self->set_error_handler([](caf::error&) {});
  after_change(st);
  return {
    [=](cmd_atom, request_ptr& r) {
      handle(self, true, [&](sandbox_actor_state& st) {
        if (r.value->query) {
          answer_query(st, r.value);
          return;
        }
        st.queue.push_back(std::move(r.value));
        pump(st);
      });
    },
    [=](timer_atom, std::uint8_t kind, std::int64_t deadline_ns) {
      handle(self, true, [&](sandbox_actor_state& st) {
        on_timer(st, static_cast<timer_kind>(kind),
                 events::time_point(events::nanoseconds(deadline_ns)));
      });
    },
    [=](appended_atom, append_ptr& r) {
      handle(self, false, [&](sandbox_actor_state& st) { on_appended(st, *r.value); });
    },
    [=](result_atom, result_ptr& r) {
      handle(self, false, [&](sandbox_actor_state& st) { on_result(st, *r.value); });
    },
    [=](landed_atom, landed_ptr& r) {
      handle(self, false, [&](sandbox_actor_state& st) { on_landed(st, *r.value); });
    },
    [=](retry_atom) { handle(self, true, [](sandbox_actor_state& st) { on_retry(st); }); },
    [=](idle_atom) { check_idle(self, directory); },
    [=](stop_atom) { self->quit(); },
  };
}

} // namespace

sandbox_actor_handle spawn_sandbox_actor(caf::local_actor* parent, actor_context* ctx,
                                         directory_handle directory, std::string sandbox_id,
                                         std::vector<std::int64_t> offsets, bool timers_scheduled) {
  return parent->spawn(sandbox_actor, ctx, std::move(directory), std::move(sandbox_id),
                       std::move(offsets), timers_scheduled);
}

} // namespace sandboxd::actors
