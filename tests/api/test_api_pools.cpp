// test_api_pools.cpp — warm pools through the RPC API (issue 31, docs/pools.md), on an
// in-process sandboxd (hollow driver, file log, private PostgreSQL): a create that matches a
// pool is served from it and says so, counts against its tenant's quota from the claim (a
// refused one gives the sandbox back), and reads like a created sandbox in every read model:
// the sandboxes row, the bill (from the claim, the claiming tenant's only), the audit chain,
// and a rebuild of the read models that equals the live ones. The Pools admin calls list,
// set and end pools.
#define BOOST_TEST_MODULE api_pools
#include <boost/test/unit_test.hpp>

#include "tests/api/api_world.hpp"

using namespace sandboxd;
using namespace sandboxd::test;
using namespace std::chrono_literals;

namespace {

template <class T>
T must(api::result<T> r) {
  BOOST_REQUIRE_MESSAGE(r.ok(), (r ? std::string() : r.err().message));
  return std::move(r).value();
}
inline void must(api::result<void> r) {
  BOOST_REQUIRE_MESSAGE(r.ok(), (r ? std::string() : r.err().message));
}

// The pool a create with the node's defaults (template base, hollow, default limits) matches.
actors::pool_settings default_pool(std::uint32_t size) {
  actors::pool_settings s;
  s.key = {"base", events::runtime_kind::hollow, {512, 1000, 512, 10240}};
  s.size = size;
  s.maximum = size;
  s.refill_per_second = 200;
  return s;
}

world_options with_pool(std::uint32_t size, bool manual_clock = false) {
  world_options o;
  o.manual_clock = manual_clock;
  o.tune_plane = [size](actors::control_plane_options& p) { p.pools = {default_pool(size)}; };
  return o;
}

bool pool_ready(api_world& w, std::uint32_t n) {
  auto all = w.plane->pools();
  return !all.empty() && all.front().ready >= n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_pools)

BOOST_AUTO_TEST_CASE(a_create_that_matches_a_pool_is_served_from_it) {
  api_world w(with_pool(2));
  BOOST_REQUIRE(eventually([&] { return pool_ready(w, 2); }));
  auto ready = w.plane->pools().front().ready_ids;
  auto a = w.connect(k_token_a);
  api::create_options o;
  o.labels = {{"task", "t-1"}};
  o.env = {{"MODE", "eval", false, std::nullopt}};
  auto sb = must(a.create(o));
  BOOST_TEST(sb.from_pool);
  BOOST_TEST(sb.state == "running");
  BOOST_TEST(sb.tenant == "a");
  BOOST_TEST((std::find(ready.begin(), ready.end(), sb.id) != ready.end()));
  BOOST_TEST((sb.labels == std::vector<events::label>{{"task", "t-1"}}));
  BOOST_TEST(must(a.get(sb.id)).state == "running");
  // Another tenant cannot reach it.
  auto b = w.connect(k_token_b);
  BOOST_TEST(!b.get(sb.id).ok());
  // It runs and answers like a created one; its environment is the create's.
  std::string out;
  auto r =
    must(a.exec(sb.id, {{"env"}}, [&](api::output_stream, std::string_view d) { out += d; }));
  BOOST_TEST(r.exit_code == 0);
  BOOST_TEST(out.find("MODE=eval\n") != std::string::npos);
  // noPool, and a create no pool matches, are made cold.
  api::create_options cold;
  cold.no_pool = true;
  BOOST_TEST(!must(a.create(cold)).from_pool);
  api::create_options other;
  other.limits.memory_mib = 256;
  BOOST_TEST(!must(a.create(other)).from_pool);
  auto f = w.plane->pools().front();
  BOOST_TEST(f.hits == 1u);
  BOOST_TEST(f.misses == 0u, "a create the pool does not match asks no pool");
}

BOOST_AUTO_TEST_CASE(a_claimed_sandbox_counts_against_its_tenant_and_a_refused_one_goes_back) {
  api_world w([] {
    auto o = with_pool(2);
    o.read_models = false;
    o.tune = [](api::server_options& s) { s.quotas["b"] = api::tenant_quota{1, 0, 0, 0, 0}; };
    return o;
  }());
  BOOST_REQUIRE(eventually([&] { return pool_ready(w, 2); }));
  auto b = w.connect(k_token_b);
  auto first = must(b.create({}));
  BOOST_TEST(first.from_pool);
  BOOST_TEST(eventually([&] { return w.server->usage("b").sandboxes == 1u; }));
  BOOST_TEST(w.server->usage(std::string(events::k_pool_tenant)).sandboxes <= 2u);
  BOOST_REQUIRE(eventually([&] { return pool_ready(w, 2); }));
  auto ready = w.plane->pools().front().ready_ids;
  auto second = b.create({});
  BOOST_REQUIRE(!second.ok());
  BOOST_TEST(api::to_string(second.code()) == "resource_exhausted");
  // The quota refused it before any claim: no pool sandbox was given to b, none was spent.
  BOOST_TEST(w.plane->pools().front().ready_ids.size() == 2u);
  BOOST_TEST((w.plane->pools().front().ready_ids == ready));
  BOOST_TEST(w.server->usage("b").sandboxes == 1u);
  // Deleted, it gives its place back as a created one does.
  must(b.remove(first.id));
  BOOST_TEST(eventually([&] { return w.server->usage("b").sandboxes == 0u; }));
  BOOST_TEST(must(b.create({})).from_pool);
}

BOOST_AUTO_TEST_CASE(read_models_bill_and_audit_a_claimed_sandbox_from_its_claim) {
  api_world w(with_pool(1, true));
  BOOST_REQUIRE(eventually([&] { return pool_ready(w, 1); }));
  // It waits in its pool two hours: nobody pays for that.
  w.clock.advance(2h);
  const auto start = w.clock.now().time_since_epoch().count();
  auto a = w.connect(k_token_admin);
  api::create_options o;
  o.labels = {{"task", "billing"}};
  auto sb = must(a.create(o));
  BOOST_TEST_REQUIRE(sb.from_pool);
  BOOST_TEST(sb.created_at_ns == start, "to its tenant it was made at the claim");
  w.clock.advance(1h);
  must(a.remove(sb.id));
  w.wait_for_projection();

  const auto hour = std::int64_t{3600} * 1'000'000'000;
  auto bill = must(a.bill("a", start - 3 * hour, start + 2 * hour));
  BOOST_TEST_REQUIRE(bill.lines.size() == 1u);
  BOOST_TEST(bill.lines[0].sandbox_id == sb.id);
  // 512 MiB running one hour at 15,000 micro-dollars per GiB-hour.
  BOOST_TEST(bill.lines[0].compute_micros == 7'500);
  BOOST_TEST(bill.lines[0].compute_gib_seconds == 1800.0);
  auto pool_bill =
    must(a.bill(std::string(events::k_pool_tenant), start - 3 * hour, start + 2 * hour));
  BOOST_TEST(pool_bill.lines.empty(), "the pool's wait is billed to nobody");

  // The sandboxes row: the tenant's, with the claim's labels, since the claim.
  api::list_filter f;
  f.include_deleted = true;
  auto page = must(a.list(f));
  BOOST_TEST_REQUIRE(page.rows.size() == 1u);
  BOOST_TEST(page.rows[0].id == sb.id);
  BOOST_TEST((page.rows[0].labels == std::vector<events::label>{{"task", "billing"}}));
  BOOST_TEST(page.rows[0].created_at_ns / 1000 == start / 1000);

  // The audit chain of the tenant starts at the claim; both chains verify.
  api::audit_query q;
  q.tenant = "a";
  std::vector<std::string> actions;
  for (const auto& r : must(a.audit(q)).rows)
    actions.push_back(r.action);
  BOOST_TEST_REQUIRE(!actions.empty());
  BOOST_TEST(actions.front() == "claim_requested");
  BOOST_TEST((std::find(actions.begin(), actions.end(), "created") == actions.end()));
  BOOST_TEST(must(a.audit_verify("a")).problems.empty());
  BOOST_TEST(must(a.audit_verify(std::string(events::k_pool_tenant))).problems.empty());
  // A rebuild from the log equals the live read models.
  auto check = must(a.verify_projection());
  BOOST_TEST(check.differences.empty());
}

BOOST_AUTO_TEST_CASE(pools_are_listed_set_and_ended_by_an_admin_only) {
  api_world w(without_read_models());
  auto admin = w.connect(k_token_admin);
  BOOST_TEST(must(admin.pools()).empty());
  api::pool_options p;
  p.size = 2;
  p.maximum = 3;
  must(admin.set_pool(p));
  BOOST_REQUIRE(eventually([&] {
    auto all = admin.pools();
    return all.ok() && all->size() == 1u && all->front().ready == 2u;
  }));
  auto info = must(admin.pools()).front();
  BOOST_TEST(info.key == "base/hollow/m512/c1000/p512/d10240");
  BOOST_TEST(info.settings.maximum == 3u);
  BOOST_TEST(info.ready_ids.size() == 2u);
  api::pool_options bad = p;
  bad.maximum = 1;
  auto refused = admin.set_pool(bad);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(api::to_string(refused.code()) == "invalid_argument");
  auto user = w.connect(k_token_a);
  auto denied = user.pools();
  BOOST_REQUIRE(!denied.ok());
  BOOST_TEST(api::to_string(denied.code()) == "permission_denied");
  // Its sandboxes serve a create, then the pool ends and serves none.
  BOOST_TEST(must(user.create({})).from_pool);
  BOOST_TEST(must(admin.remove_pool(p)));
  BOOST_TEST(!must(admin.remove_pool(p)));
  BOOST_TEST(!must(user.create({})).from_pool);
  BOOST_TEST(must(admin.pools()).empty());
}

BOOST_AUTO_TEST_SUITE_END()
