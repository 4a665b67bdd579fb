// pool_actor.cpp — one warm pool's actor: does what its pool_table plans (creates, retirements,
// wake-ups) through the sandbox directory, and turns the answers back into table updates.
#include "actors/pool_actor.hpp"

#include <algorithm>

namespace sandboxd::actors {
namespace {

// After a template lookup failed, creates wait this long (doubling up to the maximum).
constexpr std::chrono::seconds k_lookup_backoff_min{1};
constexpr std::chrono::seconds k_lookup_backoff_max{30};
// The principal of everything a pool asks of its sandboxes.
constexpr const char* k_pool_principal = "pool";

struct pool_state {
  pool_services services;
  std::optional<pool_table> table;
  std::string key; // to_string(table->settings().key)
  std::uint64_t next_request = 0;
  std::uint32_t pending_creates = 0; // planned, waiting for the template lookup
  bool looking_up = false;
  bool retiring = false;      // removed: drain, then stop
  std::uint32_t deleting = 0; // deletes sent and not settled
  events::time_point lookups_blocked_until{};
  std::chrono::seconds backoff{0};
  std::optional<events::time_point> wake_at; // the wake-up asked for last, if still due

  static inline const char* name = "pool_actor";
};

using pool_t = pool_handle::stateful_pointer<pool_state>;

// Pools refill on the system clock, whatever clock the sandboxes' timers follow.
events::time_point now_of(const pool_state&) {
  return std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
}

void send_command(pool_t self, std::string sandbox_id, command_body body, reply_when when,
                  reply_fn done) {
  auto& st = self->state;
  auto r = std::make_shared<request>();
  r->sandbox_id = std::move(sandbox_id);
  r->cmd.tenant = std::string(events::k_pool_tenant);
  r->cmd.principal = k_pool_principal;
  r->cmd.correlation_id = "pool-" + st.key + "-" + std::to_string(++st.next_request);
  r->cmd.body = std::move(body);
  r->when = when;
  r->done = std::move(done);
  self->send(st.services.directory, cmd_atom::value, request_ptr{std::move(r)});
}

// Deletes an unclaimed pool sandbox (retired, refused by a claim, or not made running).
void retire(pool_t self, const std::string& id) {
  ++self->state.deleting; // until the runtime removed it
  send_command(self, id, cmd::remove{}, reply_when::settled,
               [me = caf::actor_cast<pool_handle>(self)](command_reply) {
                 caf::anon_send(me, pool_deleted_atom::value);
               });
}

void create_sandboxes(pool_t self, const pool_spec& spec, std::uint32_t n) {
  auto& st = self->state;
  for (std::uint32_t i = 0; i < n; ++i) {
    auto created = spec.spec;
    created.pool = st.key;
    const auto started = now_of(st);
    send_command(
      self, "", cmd::create{std::move(created)}, reply_when::settled,
      [me = caf::actor_cast<pool_handle>(self), hold = spec.hold, started](command_reply r) {
        caf::anon_send(me, pool_made_atom::value,
                       made_ptr{std::make_shared<made_report>(made_report{started, std::move(r)})});
      });
  }
}

void look_up_spec(pool_t self) {
  auto& st = self->state;
  st.looking_up = true;
  auto key = st.table->settings().key;
  if (!st.services.spec) {
    pool_spec plain;
    plain.spec.template_name = key.template_name;
    plain.spec.runtime = key.runtime;
    plain.spec.limits = key.limits;
    self->send(self, pool_spec_atom::value,
               spec_ptr{std::make_shared<spec_result>(spec_result{std::move(plain)})});
    return;
  }
  st.services.ctx->pool->post(
    [fn = st.services.spec, key, me = caf::actor_cast<pool_handle>(self)] {
      auto r = std::make_shared<spec_result>();
      try {
        r->value = fn(key);
      } catch (const std::exception& e) {
        r->value = events::make_error(events::errc::internal,
                                      std::string("the template lookup failed: ") + e.what());
      }
      caf::anon_send(me, pool_spec_atom::value, spec_ptr{std::move(r)});
    });
}

// Does what the table plans now; asks for a wake-up when it plans one.
void step(pool_t self) {
  auto& st = self->state;
  if (!st.table)
    return;
  const auto now = now_of(st);
  const bool backing_off = now < st.lookups_blocked_until;
  auto p = st.table->next(now, !backing_off && !st.retiring);
  for (const auto& id : p.retire)
    retire(self, id);
  st.pending_creates += p.create;
  if (st.pending_creates > 0 && !st.looking_up)
    look_up_spec(self);
  if (backing_off && (!p.wake || st.lookups_blocked_until < *p.wake))
    p.wake = st.lookups_blocked_until;
  const auto fig = st.table->figures(now);
  if (st.retiring && fig.ready == 0 && fig.making == 0 && st.pending_creates == 0 &&
      st.deleting == 0) {
    self->quit();
    return;
  }
  if (p.wake && (!st.wake_at || *p.wake < *st.wake_at || *st.wake_at <= now)) {
    st.wake_at = p.wake;
    st.services.wakeups->schedule(*p.wake, st.key, timer_kind::retry);
  }
}

} // namespace

pool_handle spawn_pool_actor(caf::actor_system& sys, pool_services services, pool_settings settings,
                             std::vector<adopted_sandbox> adopted) {
  return sys.spawn(
    [services, settings, adopted = std::move(adopted)](pool_t self) -> pool_handle::behavior_type {
      auto& st = self->state;
      st.services = services;
      st.key = to_string(settings.key);
      st.table.emplace(settings, now_of(st));
      for (auto& a : adopted)
        st.table->adopt(std::move(a.id), std::move(a.content_id));
      self->set_default_handler(caf::drop);
      self->set_error_handler([](caf::error&) {});
      step(self);
      return {
        [=](pool_take_atom, take_ptr& t) {
          auto& st = self->state;
          auto id = st.retiring ? std::nullopt : st.table->take(t.value->content_id, now_of(st));
          t.value->done(std::move(id));
          step(self);
        },
        [=](pool_give_atom, const std::string& id, const std::string& content, bool discard) {
          auto& st = self->state;
          if (discard || st.retiring)
            retire(self, id);
          else
            st.table->give_back(id, content);
          step(self);
        },
        [=](pool_made_atom, made_ptr& m) {
          auto& st = self->state;
          auto& r = m.value->reply;
          if (r.ok() && r.state.status == sandbox_status::running) {
            st.table->made(r.state.sandbox_id, r.state.spec.content.id,
                           now_of(st) - m.value->started);
          } else {
            st.table->not_made(r.ok() ? "sandbox " + r.state.sandbox_id + " is " +
                                          std::string(to_string(r.state.status)) + ": " +
                                          r.state.failure_reason
                                      : r.failure->message);
            if (r.ok() && !r.state.sandbox_id.empty())
              retire(self, r.state.sandbox_id); // made, but not running: not kept
          }
          step(self);
        },
        [=](pool_spec_atom, spec_ptr& s) {
          auto& st = self->state;
          st.looking_up = false;
          const auto n = st.pending_creates;
          st.pending_creates = 0;
          if (auto* e = std::get_if<events::error>(&s.value->value)) {
            st.table->cancel(n, "pool " + st.key + ": " + e->message);
            st.backoff = std::clamp(st.backoff * 2, std::chrono::seconds(k_lookup_backoff_min),
                                    std::chrono::seconds(k_lookup_backoff_max));
            st.lookups_blocked_until = now_of(st) + st.backoff;
          } else {
            st.backoff = std::chrono::seconds(0);
            const auto& spec = std::get<pool_spec>(s.value->value);
            st.table->set_content(spec.spec.content.id); // a rebuilt template: the old go
            if (st.retiring)
              st.table->cancel(n, "");
            else
              create_sandboxes(self, spec, n);
          }
          step(self);
        },
        [=](pool_set_atom, settings_ptr& s) {
          auto& st = self->state;
          st.retiring = st.retiring || s.retiring;
          st.table->reconfigure(*s.value);
          step(self);
        },
        [=](pool_tick_atom) {
          auto& st = self->state;
          st.wake_at.reset();
          step(self);
        },
        [=](pool_figures_atom, figures_ptr& f) {
          auto& st = self->state;
          auto figures = st.table->figures(now_of(st));
          figures.deleting = st.deleting;
          (*f.value)(std::move(figures));
        },
        [=](pool_deleted_atom) {
          auto& st = self->state;
          if (st.deleting > 0)
            --st.deleting;
          step(self);
        },
        [=](stop_atom) { self->quit(); },
      };
    });
}

} // namespace sandboxd::actors
