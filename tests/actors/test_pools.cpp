// test_pools.cpp — warm pools through the actors (issue 31, docs/pools.md), on the embedded
// file log and the hollow driver: a pool fills with running sandboxes of the pool tenant, a
// claim hands one to a tenant exactly once (its tenant, labels, environment and timeouts the
// claim's), tenants claiming concurrently never share one, the pool refills after a burst,
// and a restart adopts the ready ones, finishes a claim a crash interrupted (or fails it when
// its secrets are gone) and deletes the sandboxes of a pool no longer configured.
#define BOOST_TEST_MODULE pools
#include <boost/test/unit_test.hpp>

#include "tests/actors/actor_world.hpp"

#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace sandboxd::test;

namespace {

ac::pool_settings hollow_pool(std::uint32_t size, std::uint32_t maximum, double rate = 200) {
  ac::pool_settings s;
  s.key = ac::key_of(spec());
  s.size = size;
  s.maximum = maximum;
  s.refill_per_second = rate;
  return s;
}

std::optional<ac::pool_figures> figures_of(ac::control_plane& plane) {
  auto all = plane.pools();
  if (all.empty())
    return std::nullopt;
  return all.front();
}

bool ready_at_least(ac::control_plane& plane, std::uint32_t n) {
  auto f = figures_of(plane);
  return f && f->ready >= n;
}

std::optional<std::string> take(ac::control_plane& plane, const ac::pool_key& key) {
  std::promise<std::optional<std::string>> p;
  auto f = p.get_future();
  plane.take_from_pool(key, "", [&p](std::optional<std::string> id) { p.set_value(id); });
  return f.get();
}

ev::claim_requested claim_of(std::vector<ev::label> labels, std::vector<ev::env_var> env = {},
                             std::string client_request_id = {}) {
  ev::claim_requested c;
  c.labels = std::move(labels);
  c.env = std::move(env);
  c.timeouts.max_lifetime = 2h;
  c.client_request_id = std::move(client_request_id);
  return c;
}

ac::command_reply claim(world& w, const std::string& id, const std::string& tenant,
                        ev::claim_requested c) {
  return w.plane->call(id, user(ac::cmd::claim{std::move(c)}, tenant));
}

// Claims `id` for acme with `c` and stops sandboxd while the claim's environment is being
// applied: its claim_requested is in the log, its outcome is not.
std::vector<std::string> stop_in_the_middle_of_a_claim(world& w, const std::string& id,
                                                       ev::claim_requested c) {
  w.driver.slow_ms = 1500;
  w.plane->submit(id, user(ac::cmd::claim{std::move(c)}), ac::reply_when::settled,
                  [](ac::command_reply) {});
  BOOST_REQUIRE(eventually([&] { return holds(history_of(*w.log, id), "claim_requested"); }));
  auto ready = w.plane->pools().front().ready_ids;
  w.stop();
  w.driver.slow_ms = 0;
  BOOST_TEST(!holds(history_of(*w.log, id), "claimed"));
  return ready;
}

std::size_t count_of(const sandbox_history& h, const std::string& type) {
  std::size_t n = 0;
  for (const auto& e : h.events)
    n += ev::type_name(e.body) == type;
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pools)

BOOST_AUTO_TEST_CASE(a_pool_fills_with_running_sandboxes_no_tenant_can_reach) {
  world w;
  w.options.pools = {hollow_pool(3, 3)};
  auto& plane = w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 3); }));
  auto f = *figures_of(plane);
  BOOST_TEST(f.key == "base/hollow/m256/c500/p0/d0");
  BOOST_TEST(f.ready_ids.size() == 3u);
  for (const auto& id : f.ready_ids) {
    auto as_pool = plane.get(id, std::string(ev::k_pool_tenant));
    BOOST_TEST_REQUIRE(as_pool.ok());
    BOOST_TEST(as_pool.state.status == ac::sandbox_status::running);
    BOOST_TEST(as_pool.state.spec.pool == f.key);
    BOOST_TEST(!plane.get(id, "acme").ok(), "a tenant sees no unclaimed pool sandbox");
    // Nor can a tenant act on it: anything but a claim is not_found.
    auto r = plane.call(id, user(ac::cmd::pause{}));
    BOOST_TEST((!r.ok() && r.failure->code == ev::errc::not_found));
    auto h = history_of(*w.log, id);
    BOOST_TEST(h.events.front().tenant == std::string(ev::k_pool_tenant));
    BOOST_TEST(h.events.front().principal == "pool");
  }
}

BOOST_AUTO_TEST_CASE(a_claim_hands_a_ready_sandbox_to_its_tenant_once) {
  world w;
  w.options.pools = {hollow_pool(2, 2)};
  auto& plane = w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 2); }));
  auto id = take(plane, hollow_pool(0, 0).key);
  BOOST_TEST_REQUIRE(id.has_value());
  auto before = w.clock.now();
  auto r = claim(w, *id, "acme",
                 claim_of({{"task", "t-1"}},
                          {{"MODE", "eval", false, std::nullopt}, {"KEY", "s3cret", true, {}}}));
  BOOST_TEST_REQUIRE(r.ok(), (r.failure ? r.failure->message : ""));
  BOOST_TEST(r.state.status == ac::sandbox_status::running);
  BOOST_TEST(r.state.tenant == "acme");
  BOOST_TEST(r.state.spec.labels == (std::vector<ev::label>{{"task", "t-1"}}));
  BOOST_TEST((r.state.created_at >= before), "its lifetime counts from the claim");
  BOOST_TEST(plane.get(*id, "acme").ok());
  BOOST_TEST(!plane.get(*id, std::string(ev::k_pool_tenant)).ok());
  // The claim's environment, secret included, is what its execs see (the driver's record).
  auto out = w.hollow.exec(*id, runtime::exec_request{"", {"env"}});
  BOOST_TEST_REQUIRE(out.ok());
  BOOST_TEST(out->stdout_data.find("MODE=eval\n") != std::string::npos);
  BOOST_TEST(out->stdout_data.find("KEY=s3cret\n") != std::string::npos);
  // In the log: the pool's create, then the claim under the tenant; no secret value.
  auto h = history_of(*w.log, *id);
  BOOST_TEST_REQUIRE(h.problem.empty(), h.problem);
  auto types = type_names(h.events);
  BOOST_TEST_REQUIRE(types.size() >= 4u);
  BOOST_TEST(types[0] == "created");
  BOOST_TEST(types[1] == "started");
  BOOST_TEST(types[2] == "claim_requested");
  BOOST_TEST(types[3] == "claimed");
  BOOST_TEST(h.events[1].tenant == std::string(ev::k_pool_tenant));
  BOOST_TEST(h.events[2].tenant == "acme");
  BOOST_TEST(h.events[2].principal == "alice");
  BOOST_TEST(h.events[3].tenant == "acme");
  for (const auto& e : h.events)
    BOOST_TEST(ev::encode(e).find("s3cret") == std::string::npos);
  // Never a second time: not for another tenant (it cannot even see it), not for this one.
  auto again = claim(w, *id, "beta", claim_of({}));
  BOOST_TEST((!again.ok() && again.failure->code == ev::errc::not_found));
  auto twice = claim(w, *id, "acme", claim_of({}, {}, "other-request"));
  BOOST_TEST((!twice.ok() && twice.failure->code == ev::errc::conflict));
  BOOST_TEST(count_of(history_of(*w.log, *id), "claim_requested") == 1u);
  // Nor is it ever handed out again: the pool made another.
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 2); }));
  auto f = *figures_of(plane);
  BOOST_TEST((std::find(f.ready_ids.begin(), f.ready_ids.end(), *id) == f.ready_ids.end()));
  BOOST_TEST(f.hits == 1u);
}

BOOST_AUTO_TEST_CASE(a_claimed_sandbox_behaves_like_a_created_one) {
  world w;
  w.options.pools = {hollow_pool(1, 1)};
  auto& plane = w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 1); }));
  auto id = *take(plane, hollow_pool(0, 0).key);
  BOOST_TEST_REQUIRE(claim(w, id, "acme", claim_of({})).ok());
  auto paused = plane.call(id, user(ac::cmd::pause{ev::pause_mode::memory}));
  BOOST_TEST_REQUIRE(paused.ok());
  BOOST_TEST(paused.state.status == ac::sandbox_status::paused);
  auto resumed = plane.call(id, user(ac::cmd::resume{}));
  BOOST_TEST(resumed.state.status == ac::sandbox_status::running);
  auto deleted = plane.call(id, user(ac::cmd::remove{}));
  BOOST_TEST(deleted.state.status == ac::sandbox_status::deleted);
  BOOST_TEST(!w.hollow.inspect(id).ok(), "gone from the runtime");
}

BOOST_AUTO_TEST_CASE(two_tenants_claiming_concurrently_never_get_the_same_sandbox) {
  world w;
  w.options.pools = {hollow_pool(16, 16, 1000)};
  auto& plane = w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 16); }));
  const auto key = hollow_pool(0, 0).key;
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> owners; // sandbox -> tenants it answered
  auto claimer = [&](std::string tenant) {
    for (int i = 0; i < 20; ++i) {
      auto id = take(plane, key);
      if (!id)
        continue;
      auto r = w.plane->call(*id, user(ac::cmd::claim{claim_of({{"by", tenant}})}, tenant));
      if (r.ok() && r.state.status == ac::sandbox_status::running) {
        std::lock_guard g(mu);
        owners[r.state.sandbox_id].push_back(tenant);
      }
    }
  };
  std::thread a(claimer, "acme"), b(claimer, "beta");
  a.join();
  b.join();
  BOOST_TEST(owners.size() >= 16u);
  for (const auto& [id, tenants] : owners) {
    BOOST_TEST(tenants.size() == 1u, id << " answered to " << tenants.size() << " claims");
    BOOST_TEST(count_of(history_of(*w.log, id), "claim_requested") == 1u);
  }
  // Both claims racing on one sandbox (as two pools would if they ever shared one): one wins.
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 1); }));
  auto id = *take(plane, key);
  auto ra = std::async(std::launch::async, [&] { return claim(w, id, "acme", claim_of({})); });
  auto rb = std::async(std::launch::async, [&] { return claim(w, id, "beta", claim_of({})); });
  auto x = ra.get(), y = rb.get();
  BOOST_TEST((x.ok() != y.ok()), "exactly one of two racing claims wins");
  BOOST_TEST(count_of(history_of(*w.log, id), "claim_requested") == 1u);
}

BOOST_AUTO_TEST_CASE(the_pool_refills_to_its_size_after_a_burst) {
  world w;
  w.options.pools = {hollow_pool(4, 8, 500)};
  auto& plane = w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 4); }));
  const auto key = hollow_pool(0, 0).key;
  int served = 0;
  for (int i = 0; i < 12; ++i)
    if (auto id = take(plane, key); id && claim(w, *id, "acme", claim_of({})).ok())
      ++served;
  BOOST_TEST(served >= 4);
  // The burst raised the target (size + demand, at most the maximum), then it falls back.
  BOOST_TEST(figures_of(plane)->target == 8u);
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 8); }));
  BOOST_REQUIRE(eventually(
    [&] {
      auto f = figures_of(plane);
      return f && f->target == 4u && f->ready == 4u;
    },
    ac::k_demand_window + 10s));
  auto f = *figures_of(plane);
  BOOST_TEST(f.retired == 4u);
  BOOST_TEST(f.misses + f.hits == 12u);
}

BOOST_AUTO_TEST_CASE(a_refused_claim_frees_its_request_id_for_the_cold_create) {
  world w;
  w.options.pools = {hollow_pool(1, 1)};
  auto& plane = w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 1); }));
  auto id = *take(plane, hollow_pool(0, 0).key);
  // The pool sandbox went (deleted) before the claim reached it: refused.
  BOOST_TEST_REQUIRE(plane.call(id, user(ac::cmd::remove{}, std::string(ev::k_pool_tenant))).ok());
  auto refused = claim(w, id, "acme", claim_of({}, {}, "req-9"));
  BOOST_TEST_REQUIRE(!refused.ok());
  // The create made cold with the same request id is a new sandbox, and a retry of it too.
  auto cold = w.create(spec("req-9"));
  BOOST_TEST(cold != id);
  BOOST_TEST(w.create(spec("req-9")) == cold);
  // A claim that succeeded: a retried create with its request id answers the claimed one.
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 1); }));
  auto id2 = *take(plane, hollow_pool(0, 0).key);
  BOOST_TEST_REQUIRE(claim(w, id2, "acme", claim_of({}, {}, "req-10")).ok());
  BOOST_TEST(w.create(spec("req-10")) == id2);
}

BOOST_AUTO_TEST_CASE(a_restart_adopts_ready_sandboxes_and_finishes_a_claim_in_flight) {
  world w;
  w.options.pools = {hollow_pool(3, 3)};
  w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(*w.plane, 3); }));
  auto id = *take(*w.plane, hollow_pool(0, 0).key);
  auto ready_before =
    stop_in_the_middle_of_a_claim(w, id, claim_of({{"t", "1"}}, {{"A", "1", false, {}}}));
  auto& plane = w.restart();
  // Recovery finished the claim: the tenant's, running, with its environment.
  auto r = plane.get(id, "acme");
  BOOST_TEST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == ac::sandbox_status::running);
  BOOST_TEST(count_of(history_of(*w.log, id), "claimed") == 1u);
  auto out = w.hollow.exec(id, runtime::exec_request{"", {"env"}});
  BOOST_TEST(out->stdout_data.find("A=1\n") != std::string::npos);
  // The ready ones are ready again (adopted, not made anew); the claimed one is not.
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 3); }));
  auto f = *figures_of(plane);
  for (const auto& ready : ready_before)
    BOOST_TEST((std::find(f.ready_ids.begin(), f.ready_ids.end(), ready) != f.ready_ids.end()));
  BOOST_TEST((std::find(f.ready_ids.begin(), f.ready_ids.end(), id) == f.ready_ids.end()));
}

BOOST_AUTO_TEST_CASE(a_claim_whose_secrets_a_restart_lost_fails_and_goes_to_no_one_else) {
  world w;
  w.options.pools = {hollow_pool(1, 1)};
  w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(*w.plane, 1); }));
  auto id = *take(*w.plane, hollow_pool(0, 0).key);
  stop_in_the_middle_of_a_claim(w, id, claim_of({}, {{"KEY", "s3cret", true, {}}}));
  auto& plane = w.restart();
  auto r = plane.get(id, "acme");
  BOOST_TEST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == ac::sandbox_status::failed);
  BOOST_TEST(r.state.failed_step == ev::runtime_step::claiming);
  BOOST_TEST(r.state.failure_reason.find("secret") != std::string::npos);
  BOOST_REQUIRE(eventually([&] { return ready_at_least(plane, 1); }));
  BOOST_TEST(figures_of(plane)->ready_ids.front() != id);
}

BOOST_AUTO_TEST_CASE(sandboxes_of_a_pool_no_longer_configured_are_deleted_at_start) {
  world w;
  w.options.pools = {hollow_pool(2, 2)};
  w.start();
  BOOST_REQUIRE(eventually([&] { return ready_at_least(*w.plane, 2); }));
  auto ids = figures_of(*w.plane)->ready_ids;
  w.options.pools.clear();
  w.restart();
  for (const auto& id : ids)
    BOOST_TEST(eventually([&] { return holds(history_of(*w.log, id), "deleted"); }), id);
  BOOST_TEST(w.plane->pools().empty());
}

BOOST_AUTO_TEST_CASE(a_removed_pool_deletes_its_ready_sandboxes_and_stops) {
  world w;
  w.start();
  BOOST_TEST(!w.plane->set_pool(hollow_pool(2, 2)));
  BOOST_REQUIRE(eventually([&] { return ready_at_least(*w.plane, 2); }));
  auto ids = figures_of(*w.plane)->ready_ids;
  auto bad = hollow_pool(3, 1);
  BOOST_TEST(w.plane->set_pool(bad).has_value(), "maximum below size is refused");
  BOOST_TEST(w.plane->remove_pool(hollow_pool(0, 0).key));
  BOOST_TEST(!w.plane->remove_pool(hollow_pool(0, 0).key));
  for (const auto& id : ids)
    BOOST_TEST(eventually([&] { return holds(history_of(*w.log, id), "deleted"); }), id);
  BOOST_TEST(!take(*w.plane, hollow_pool(0, 0).key).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
