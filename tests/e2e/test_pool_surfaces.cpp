// test_pool_surfaces.cpp — warm pools through the operator's and the tenant's surfaces (issue
// 31, docs/pools.md), on a sandboxd of the hollow runtime whose config file keeps a pool:
//   - `sandboxctl pool list` shows it filling (its key, ready, target); `pool set` changes it
//     and `pool rm` ends it; a tenant without the admin scope is refused all three;
//   - `sandboxctl create` (no new flag) is served from it and says so in --json; a tenant's
//     create is served too; `create --no-pool` is cold and asks no pool;
//   - a create while the pool holds nothing ready is a miss, made cold;
//   - the metrics count the pool's sizes, hits, misses, creates and refill time;
//   - a pool over a ceiling stops the start (no create could be served from it).
#define BOOST_TEST_MODULE pool_surfaces
#include "tests/e2e/api_e2e_support.hpp"
#include "tests/e2e/metrics_scrape.hpp"

#include <nlohmann/json.hpp>

using namespace sandboxd;
using namespace sandboxd::test;
using json = nlohmann::json;

namespace {

json pool_list(const daemon_process& d) {
  auto j = json::parse(ctl_ok(d, {"--json", "pool", "list"}));
  BOOST_REQUIRE_MESSAGE(j["pools"].size() == 1u, "pools: " << j.dump());
  return j["pools"][0];
}

json create_json(const daemon_process& d, std::vector<std::string> flags,
                 const std::string& token = "") {
  flags.insert(flags.begin(), {"--json", "create"});
  ctl_options o;
  if (!token.empty())
    o.env.emplace("SANDBOXD_TOKEN", token);
  return json::parse(ctl_ok(d, flags, o));
}

// The sample of `name` whose labels hold `with` (one only).
double pool_sample(const std::map<std::string, double>& m, const std::string& name,
                   const std::string& with) {
  std::optional<double> found;
  for (const auto& [k, v] : m)
    if (k.rfind(name + "{", 0) == 0 && k.find(with) != std::string::npos) {
      BOOST_TEST(!found.has_value(), "two samples of " << name << " with " << with);
      found = v;
    }
  BOOST_TEST_REQUIRE(found.has_value(), "no sample of " << name << " with " << with);
  return *found;
}

} // namespace

BOOST_AUTO_TEST_CASE(sandboxctl_and_the_metrics_show_and_use_the_pool) {
  node_dir config_dir;
  const std::string config = config_dir.path() + "/pools.toml";
  std::ofstream(config) << "[[pools]]\ntemplate = \"base\"\nruntime = \"hollow\"\nsize = 2\n"
                           "maximum = 2\nrefill_per_second = 50\n";
  const int port = free_tcp_port();
  daemon_process d({"--runtime", "hollow", "--config", config, "--tokens-file",
                    write_tokens_file(config_dir.path()), "--metrics-addr",
                    "127.0.0.1:" + std::to_string(port)});

  // The operator sees it fill.
  json pool;
  BOOST_TEST_REQUIRE(eventually([&] {
    pool = pool_list(d);
    return pool["ready"] == 2;
  }));
  const std::string key = pool["key"];
  BOOST_TEST(key.rfind("base/hollow/", 0) == 0u, key);
  BOOST_TEST(pool["target"] == 2);
  BOOST_TEST(pool["hits"] == 0);

  // A plain create is served from it; --no-pool is not, and asks no pool.
  auto served = create_json(d, {});
  BOOST_TEST(served["from_pool"] == true, served.dump());
  auto cold = create_json(d, {"--no-pool"});
  BOOST_TEST(!cold.contains("from_pool"), cold.dump());
  BOOST_TEST(served["id"] != cold["id"]);
  // A tenant's create too, and the tenant sees its own sandbox only.
  auto theirs = create_json(d, {}, k_token_acme);
  BOOST_TEST(theirs["from_pool"] == true, theirs.dump());
  BOOST_TEST(theirs["id"] != served["id"]);
  ctl_options as_acme;
  as_acme.env.emplace("SANDBOXD_TOKEN", k_token_acme);
  auto other = ctl(d, {"get", served["id"]}, as_acme);
  BOOST_TEST(other.exit_code != 0, "acme reads the dev tenant's sandbox: " << other);

  // A tenant cannot see or change pools.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"pool", "list"},
        {"pool", "set", "--runtime", "hollow", "--size", "5"},
        {"pool", "rm", "--runtime", "hollow"}}) {
    auto r = ctl(d, args, as_acme);
    BOOST_TEST(r.exit_code != 0, "acme ran sandboxctl " << args[1] << ": " << r);
    BOOST_TEST(r.err.find("admin") != std::string::npos, r);
  }
  pool = pool_list(d);
  BOOST_TEST(pool["hits"] == 2);
  BOOST_TEST(pool["misses"] == 0, "--no-pool asks no pool");
  BOOST_TEST(pool["size"] == 2, pool.dump());

  // Emptied by the operator: a create is a miss, made cold.
  ctl_ok(d, {"pool", "set", "--runtime", "hollow", "--size", "0"});
  BOOST_TEST_REQUIRE(eventually([&] {
    auto now = pool_list(d);
    return now["ready"] == 0 && now["making"] == 0;
  }));
  auto missed = create_json(d, {});
  BOOST_TEST(!missed.contains("from_pool"), missed.dump());
  pool = pool_list(d);
  BOOST_TEST(pool["misses"] == 1);
  BOOST_TEST(pool["hits"] == 2);

  // The metrics say the same.
  std::map<std::string, double> m;
  BOOST_TEST_REQUIRE(eventually([&] {
    m = scrape(port);
    return pool_sample(m, "sandboxd_pool_sandboxes", "kind=\"ready\"") == 0;
  }));
  const std::string of = "pool=\"" + key + "\"";
  BOOST_TEST(pool_sample(m, "sandboxd_pool_claims_total", "outcome=\"hit\"") == 2);
  BOOST_TEST(pool_sample(m, "sandboxd_pool_claims_total", "outcome=\"miss\"") == 1);
  // Nothing ready or being made: every sandbox the pool made was claimed or retired.
  const double made = pool_sample(m, "sandboxd_pool_creates_total", "outcome=\"made\"");
  BOOST_TEST(made >= 2);
  BOOST_TEST(pool_sample(m, "sandboxd_pool_creates_total", "outcome=\"failed\"") == 0);
  BOOST_TEST(pool_sample(m, "sandboxd_pool_retired_total", of) >= 1);
  BOOST_TEST(made == 2 + pool_sample(m, "sandboxd_pool_retired_total", of));
  BOOST_TEST(pool_sample(m, "sandboxd_pool_refill_seconds", "stat=\"mean\"") > 0);
  BOOST_TEST(pool_sample(m, "sandboxd_pool_refill_seconds", "stat=\"max\"") >=
             pool_sample(m, "sandboxd_pool_refill_seconds", "stat=\"mean\""));
  BOOST_TEST(pool_sample(m, "sandboxd_pool_sandboxes", "kind=\"target\"") == 0);

  // Ended: listed no more.
  ctl_ok(d, {"pool", "rm", "--runtime", "hollow"});
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "pool", "list"}))["pools"].empty());
  for (const auto& id : {served["id"], cold["id"], missed["id"]})
    ctl_ok(d, {"delete", id.get<std::string>()});
  ctl_ok(d, {"delete", theirs["id"].get<std::string>()}, as_acme);
  BOOST_TEST(d.stop() == 0);
}

// A pool whose sandboxes pass a ceiling could never serve a create: the daemon refuses to
// start with it and says which pool, limit and ceiling (and what to do).
BOOST_AUTO_TEST_CASE(a_pool_over_a_ceiling_stops_the_start) {
  node_dir config_dir;
  const std::string config = config_dir.path() + "/pools.toml";
  std::ofstream(config) << "[[pools]]\ntemplate = \"base\"\nruntime = \"hollow\"\n"
                           "memory_mib = 8192\nsize = 1\n";
  try {
    daemon_process d({"--runtime", "hollow", "--config", config, "--max-memory-mib", "4096"});
    BOOST_FAIL("sandboxd started with a pool over its memory ceiling");
  } catch (const std::runtime_error& e) {
    const std::string why = e.what();
    BOOST_TEST(why.find("sandboxd cannot start: pool base/hollow/m8192/") != std::string::npos,
               why);
    BOOST_TEST(why.find("memory_mib 8192 is over this node's ceiling of 4096") != std::string::npos,
               why);
  }
}
