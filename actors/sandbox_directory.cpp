// sandbox_directory — finds, spawns, passivates and reactivates the sandbox actors.
//
// Invariants:
// - Every sandbox the log knows has exactly one entry: active (an actor) or dormant (the
//   offsets of its events, from which reactivation rebuilds it).
// - An actor is passivated only when the directory has forwarded it nothing it has not yet
//   received (`forwarded == received`), so no command is ever lost to a passivation; later
//   commands go to a fresh actor rebuilt from the log.
// - The idempotent-create index maps (tenant, client request id) to the sandbox id the
//   first create chose; it is rebuilt from the `created` events at recovery. A claim
//   (docs/pools.md) enters its pool sandbox's id under the claiming tenant's request id; a
//   claim that is refused takes it out again (it made nothing the tenant's), so the cold
//   create the server falls back to is free to use the request id.
#include "actors/sandbox_directory.hpp"

#include "actors/sandbox_actor.hpp"

#include <random>
#include <unordered_map>

namespace sandboxd::actors {
namespace {

struct directory_entry {
  sandbox_actor_handle actor; // invalid while dormant
  std::uint64_t forwarded = 0;
  std::vector<std::int64_t> offsets; // dormant only
};

struct directory_state {
  actor_context* ctx = nullptr;
  std::unordered_map<std::string, directory_entry> sandboxes;
  std::unordered_map<std::string, std::string> by_request;
  std::size_t active = 0;
  std::mt19937_64 rng{std::random_device{}()};

  static inline const char* name = "sandbox_directory";
};

using directory_t = directory_handle::stateful_pointer<directory_state>;

std::string new_sandbox_id(directory_state& st) {
  static constexpr char k_hex[] = "0123456789abcdef";
  for (;;) {
    std::uint64_t bits = st.rng();
    std::string id = "sb-";
    for (int i = 0; i < 12; ++i, bits >>= 4)
      id.push_back(k_hex[bits & 15]);
    if (!st.sandboxes.count(id))
      return id;
  }
}

// The actor of an entry, reactivating a dormant one from the log.
const sandbox_actor_handle& actor_of(directory_t self, const std::string& id, directory_entry& e) {
  auto& st = self->state;
  if (!e.actor) {
    e.actor = spawn_sandbox_actor(self, st.ctx, caf::actor_cast<directory_handle>(self), id,
                                  std::move(e.offsets), true);
    e.offsets = {};
    e.forwarded = 0;
    ++st.active;
  }
  return e.actor;
}

// A claim with a client request id: to the sandbox that id already names (a retried create),
// or it names the claimed sandbox from now on — unless the claim is refused.
void route_claim(directory_t self, request& req) {
  auto& st = self->state;
  const auto& crid = std::get<cmd::claim>(req.cmd.body).claim.client_request_id;
  if (crid.empty())
    return;
  auto key = idempotency_key(req.cmd.tenant, crid);
  if (auto known = st.by_request.find(key); known != st.by_request.end()) {
    req.sandbox_id = known->second;
    return;
  }
  st.by_request.emplace(key, req.sandbox_id);
  req.done = [dir = caf::actor_cast<directory_handle>(self), key, id = req.sandbox_id,
              done = std::move(req.done)](command_reply reply) {
    if (!reply.ok())
      caf::anon_send(dir, forget_atom::value, key, id);
    if (done)
      done(std::move(reply));
  };
}

void route(directory_t self, request_ptr& r) {
  auto& st = self->state;
  auto& req = *r.value;
  const bool create = !req.query && std::holds_alternative<cmd::create>(req.cmd.body);
  if (create) {
    const auto& crid = std::get<cmd::create>(req.cmd.body).spec.client_request_id;
    std::string key = crid.empty() ? std::string() : idempotency_key(req.cmd.tenant, crid);
    auto known = key.empty() ? st.by_request.end() : st.by_request.find(key);
    if (known != st.by_request.end())
      req.sandbox_id = known->second;
    else if (req.sandbox_id.empty())
      req.sandbox_id = new_sandbox_id(st);
    if (!key.empty() && known == st.by_request.end())
      st.by_request.emplace(std::move(key), req.sandbox_id);
  }
  auto it = st.sandboxes.find(req.sandbox_id);
  if (it == st.sandboxes.end()) {
    if (!create) {
      auto missing = events::make_error(events::errc::not_found, "sandbox " + req.sandbox_id +
                                                                   " does not exist; check the "
                                                                   "sandbox id");
      if (req.op)
        req.op->answer(std::move(missing), 0);
      else if (req.done)
        req.done(command_reply{std::move(missing), {}});
      return;
    }
    it = st.sandboxes.emplace(req.sandbox_id, directory_entry{}).first;
  }
  if (!req.query && std::holds_alternative<cmd::claim>(req.cmd.body)) {
    route_claim(self, req);
    it = st.sandboxes.find(req.sandbox_id);
    if (it == st.sandboxes.end())
      return; // the index names only sandboxes the directory has: cannot happen
  }
  auto& e = it->second;
  const auto& a = actor_of(self, it->first, e);
  ++e.forwarded;
  self->send(a, cmd_atom::value, std::move(r));
}

// Forwards a wake-up (a passivation check, a retry) to the sandbox's actor; a dormant
// sandbox has nothing to check or retry.
template <class Atom>
void wake(directory_t self, const std::string& id, Atom atom) {
  auto& st = self->state;
  auto it = st.sandboxes.find(id);
  if (it == st.sandboxes.end() || !it->second.actor)
    return;
  ++it->second.forwarded;
  self->send(it->second.actor, atom);
}

} // namespace

directory_handle spawn_sandbox_directory(caf::actor_system& sys, actor_context* ctx,
                                         std::shared_ptr<directory_seed> seed) {
  return sys.spawn([ctx, seed](directory_t self) -> directory_handle::behavior_type {
    auto& st = self->state;
    st.ctx = ctx;
    const auto now = ctx->clock();
    st.sandboxes.reserve(seed->sandboxes.size());
    for (auto& r : seed->sandboxes) {
      if (!r.idempotency_key.empty())
        st.by_request.emplace(std::move(r.idempotency_key), r.sandbox_id);
      if (r.due.idle)
        ctx->timers->schedule(*r.due.idle, r.sandbox_id, timer_kind::idle);
      if (r.due.lifetime)
        ctx->timers->schedule(*r.due.lifetime, r.sandbox_id, timer_kind::lifetime);
      if (r.due.retention)
        ctx->timers->schedule(*r.due.retention, r.sandbox_id, timer_kind::retention);
      if (r.due.timeout)
        ctx->timers->schedule(*r.due.timeout, r.sandbox_id, timer_kind::timeout);
      if (ctx->sample_interval.count() > 0 &&
          (r.status == sandbox_status::running || r.status == sandbox_status::paused))
        ctx->timers->schedule(now + ctx->sample_interval, r.sandbox_id, timer_kind::sample);
      directory_entry e;
      e.offsets = std::move(r.offsets);
      st.sandboxes.emplace(std::move(r.sandbox_id), std::move(e));
    }
    seed->sandboxes.clear();
    seed->sandboxes.shrink_to_fit();
    self->set_default_handler(caf::drop);
    self->set_error_handler([](caf::error&) {});
    return {
      [=](cmd_atom, request_ptr& r) { route(self, r); },
      [=](timer_atom, const std::string& id, std::uint8_t kind, std::int64_t deadline_ns) {
        auto& st = self->state;
        auto it = st.sandboxes.find(id);
        if (it == st.sandboxes.end())
          return;
        auto& e = it->second;
        const auto& a = actor_of(self, it->first, e);
        ++e.forwarded;
        self->send(a, timer_atom::value, kind, deadline_ns);
      },
      [=](forget_atom, const std::string& key, const std::string& id) {
        auto& st = self->state;
        if (auto it = st.by_request.find(key); it != st.by_request.end() && it->second == id)
          st.by_request.erase(it);
      },
      [=](idle_atom, const std::string& id) { wake(self, id, idle_atom::value); },
      [=](retry_atom, const std::string& id) { wake(self, id, retry_atom::value); },
      [=](passive_atom, const std::string& id, std::uint64_t received, offsets_ptr& offsets) {
        auto& st = self->state;
        auto it = st.sandboxes.find(id);
        if (it == st.sandboxes.end() || !it->second.actor || it->second.forwarded != received ||
            self->current_sender() != caf::actor_cast<caf::strong_actor_ptr>(it->second.actor))
          return; // sent more since, or an offer of an earlier actor: it stays active
        auto& e = it->second;
        self->send(e.actor, stop_atom::value);
        e.actor = sandbox_actor_handle{};
        e.forwarded = 0;
        e.offsets = std::move(*offsets.value);
        e.offsets.shrink_to_fit();
        --st.active;
      },
      [=](stats_atom, stats_ptr& p) {
        auto& st = self->state;
        directory_stats s;
        s.active = st.active;
        s.dormant = st.sandboxes.size() - st.active;
        s.timers = st.ctx->timers->size();
        s.journal_rounds = st.ctx->journal_->rounds();
        s.journal_records = st.ctx->journal_->records_appended();
        (*p.value)(s);
      },
      [=](stop_atom) {
        auto& st = self->state;
        for (auto& [id, e] : st.sandboxes)
          if (e.actor)
            self->send(e.actor, stop_atom::value);
        self->quit();
      },
    };
  });
}

} // namespace sandboxd::actors
