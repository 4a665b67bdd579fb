// test_pool_crash.cpp — warm pools across kill -9 (issue 31, docs/pools.md): a sandboxd with
// a pool ([[pools]] in its config file; the hollow runtime, or crun or runsc with
// SANDBOXD_POOL_CRASH_RUNTIME=crun|runsc), two tenants creating concurrently (served from the pool
// and cold when it runs dry) while the daemon is killed with SIGKILL in the middle of claims
// and refills, over three rounds. Then, from the log itself (Admin.tail, folded with the
// state machine):
//   - no sandbox was claimed twice, and none was answered to two tenants;
//   - every create answered from a pool names the sandbox its tenant claimed;
//   - no sandbox is left mid-claim (or in any transitional state), and no claimed sandbox is
//     among a pool's ready ones;
//   - after SIGTERM nothing of the node runs or is mounted.
#define BOOST_TEST_MODULE pool_crash
#include "tests/e2e/api_e2e_support.hpp"

#include "actors/sandbox_machine.hpp"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

using namespace sandboxd;
using namespace sandboxd::test;

namespace {

std::string runtime_under_test() {
  const char* r = std::getenv("SANDBOXD_POOL_CRASH_RUNTIME");
  return r ? r : "hollow";
}

boost::test_tools::assertion_result runtime_runs(utf::test_unit_id) {
  if (runtime_under_test() == "hollow")
    return true;
  if (runtime_under_test() == "runsc" && !runsc_runs()) {
    boost::test_tools::assertion_result r(false);
    r.message() << "runsc cannot run sandboxes here";
    return r;
  }
  return crun_can_run(utf::test_unit_id{});
}

std::string write_config(const std::string& dir, const std::string& runtime) {
  const std::string path = dir + "/pools.toml";
  std::ofstream out(path);
  out << "[[pools]]\ntemplate = \"base\"\nruntime = \"" << runtime
      << "\"\nsize = 4\nmaximum = 8\nrefill_per_second = 50\n";
  return path;
}

struct answered {
  std::string id;
  std::string tenant;
  bool from_pool = false;
};

// Creates (and deletes again, so that the tenant's quota never runs out) until a call fails
// (the daemon is gone), recording every create answered; `why` gets what ended it.
void creator(const daemon_process& d, const std::string& token, const std::string& tenant,
             std::mutex& mu, std::vector<answered>& out, std::atomic<int>& served,
             std::string& why) {
  auto c = api::client::connect({d.address(), token});
  if (!c.ok()) {
    why = c.err().message;
    return;
  }
  for (;;) {
    api::create_options o;
    o.labels = {{"owner", tenant}};
    auto sb = c->create(o);
    if (!sb.ok()) {
      why = sb.err().message;
      return;
    }
    {
      std::lock_guard l(mu);
      out.push_back({sb->id, tenant, sb->from_pool});
      ++served;
    }
    if (auto r = c->remove(sb->id); !r.ok()) {
      why = r.err().message;
      return;
    }
  }
}

// Every event of the log, by sandbox, through the admin's tail.
std::map<std::string, std::vector<events::event>> whole_log(api::client& admin) {
  std::map<std::string, std::vector<events::event>> by_sandbox;
  auto r = admin.tail({}, false, [&](const api::streamed_event& e) {
    by_sandbox[e.event.sandbox_id].push_back(e.event);
    return true;
  });
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
  return by_sandbox;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pool_crash, *utf::precondition(runtime_runs))

BOOST_AUTO_TEST_CASE(kill_9_during_claims_and_refills_never_hands_a_sandbox_to_two_tenants) {
  const auto runtime = runtime_under_test();
  node_dir config_dir;
  std::vector<std::string> flags{"--runtime",     runtime,
                                 "--config",      write_config(config_dir.path(), runtime),
                                 "--tokens-file", write_tokens_file(config_dir.path())};
  daemon_process d(flags);
  std::mutex mu;
  std::vector<answered> acks;
  const int rounds = 3;
  for (int round = 0; round < rounds; ++round) {
    if (round > 0)
      d.restart();
    std::atomic<int> served{0};
    std::vector<std::thread> threads;
    std::string why[2];
    int n = 0;
    for (const auto& [token, tenant] : {std::pair{k_token_acme, std::string("acme")},
                                        std::pair{k_token_globex, std::string("globex")}})
      threads.emplace_back([&, token = token, tenant = tenant, w = n++] {
        creator(d, token, tenant, mu, acks, served, why[w]);
      });
    // Past the pool's first sandboxes (claims and refills under way), then the crash.
    const bool busy = eventually([&] { return served >= 10; }, 180s);
    d.kill9();
    for (auto& t : threads)
      t.join();
    BOOST_TEST_REQUIRE(busy, "round " << round << ": " << served << " creates; the creators "
                                      << "ended with: " << why[0] << " / " << why[1]);
  }
  d.restart();
  auto admin = connect(d, d.token());
  // Recovery finished every claim a kill interrupted before the daemon took calls: none is
  // mid-claim. The pool then adopts what was ready, deletes what it no longer wants and
  // refills; once it is full and settled, its ready sandboxes, then the log (which holds at
  // least their events by then), folded with the state machine.
  std::vector<api::pool_info> pools;
  std::map<std::string, std::vector<events::event>> log;
  std::map<std::string, actors::sandbox_state> states;
  const bool settled = eventually(
    [&] {
      auto p = admin.pools();
      if (!p.ok() || p->size() != 1u || p->front().ready < 4u)
        return false;
      pools = *p;
      log = whole_log(admin);
      states.clear();
      for (const auto& [id, evs] : log) {
        if (id == events::template_stream_key)
          continue;
        auto s = actors::initial_state(id);
        for (const auto& e : evs)
          s = actors::evolve(std::move(s), e);
        BOOST_TEST(s.status != actors::sandbox_status::claiming, id << " is left mid-claim");
        states[id] = std::move(s);
      }
      return std::none_of(states.begin(), states.end(),
                          [](const auto& s) { return actors::step_in_flight(s.second); });
    },
    120s);
  BOOST_TEST_REQUIRE(settled, "the node did not settle: a sandbox stays transitional");
  std::size_t claims = 0, pooled = 0;
  for (const auto& [id, evs] : log) {
    // Copies of a record (an append retried after a crash) are dropped by evolve; the claims
    // of the sandbox's history are its distinct sequence numbers holding one.
    std::set<std::uint64_t> claim_seqs;
    for (const auto& e : evs)
      if (std::holds_alternative<events::claim_requested>(e.body))
        claim_seqs.insert(e.sequence);
    BOOST_TEST(claim_seqs.size() <= 1u, id << " was claimed " << claim_seqs.size() << " times");
    claims += claim_seqs.size();
    pooled += states.count(id) && !states[id].spec.pool.empty();
  }
  BOOST_TEST_MESSAGE(runtime << ": " << acks.size() << " creates answered over " << rounds
                             << " kills, " << pooled << " pool sandboxes made, " << claims
                             << " claimed");
  BOOST_TEST(claims > 0u);
  // Each answer names a sandbox of its tenant, and no sandbox was answered twice.
  std::map<std::string, std::string> owner;
  for (const auto& a : acks) {
    BOOST_TEST(owner.emplace(a.id, a.tenant).second, a.id << " was answered twice");
    auto it = states.find(a.id);
    BOOST_TEST_REQUIRE((it != states.end()), a.id << " is not in the log");
    BOOST_TEST(it->second.tenant == a.tenant, a.id << " belongs to " << it->second.tenant);
    if (a.from_pool)
      BOOST_TEST(!it->second.spec.pool.empty());
  }
  // No claimed sandbox is ready in a pool.
  BOOST_TEST_REQUIRE(pools.size() == 1u);
  for (const auto& id : pools.front().ready_ids) {
    BOOST_TEST(states[id].tenant == std::string(events::k_pool_tenant), id);
    BOOST_TEST(states[id].status == actors::sandbox_status::running, id);
  }
  // The tenants delete what they still have (sandboxes a kill left them: claims recovery
  // finished, creates whose delete never came); a clean stop then deletes the pool's ready
  // sandboxes and leaves nothing: no process, no mount, no sandbox directory.
  std::map<std::string, api::client> tenants;
  tenants.emplace("acme", connect(d, k_token_acme));
  tenants.emplace("globex", connect(d, k_token_globex));
  std::vector<std::string> all;
  for (const auto& [id, s] : states) {
    all.push_back(id);
    if (s.status != actors::sandbox_status::deleted && tenants.count(s.tenant))
      must(tenants.at(s.tenant).remove(id), "delete " + id);
  }
  tenants.clear();
  BOOST_TEST(d.stop() == 0);
  BOOST_TEST(d.log().find("warm pools drained") != std::string::npos, d.log());
  BOOST_TEST(processes_under(d.data()).empty(), "processes left under " << d.data());
  for (const auto& id : all)
    BOOST_TEST(sandbox_processes(id).empty(), "processes left in sandbox " << id);
  for (const auto& m : mounts_under(d.data()))
    BOOST_TEST(false, "mount left: " << m);
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(d.data() + "/runtimes/" + runtime + "/sandboxes", ec))
    BOOST_TEST(false, "sandbox directory left: " << e.path());
}

BOOST_AUTO_TEST_SUITE_END()
