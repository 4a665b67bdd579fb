// Attacks by the agent itself (docs/agent-protocol.md, "What the host refuses"): in each of
// several sandboxes of one node, a program takes the agent's place (any process of the
// sandbox can connect to its socket and say hello) and then sends garbage, a huge length, half
// a frame, nothing at all, a flood of output past every cap, or a flood of connections. Each
// of those sandboxes must end `failed` with an event naming what its agent did, with nothing
// of it left running; meanwhile the node keeps serving another sandbox (its execs go on while
// the attacks run: their latencies are printed beside the ones measured before) and its
// memory stays bounded. Built for crun (the host side is the same code for runsc, whose
// agents connect through --host-uds; the conformance suite runs those).
#define BOOST_TEST_MODULE attack_hostile_agent
#include <boost/test/unit_test.hpp>

#include "tests/node/node_checks.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/build_tree.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <tuple>

using namespace sandboxd::test;
using ac::sandbox_status;
namespace cmd = sandboxd::actors::cmd;

namespace {

const ev::runtime_kind k_kind = ev::runtime_kind::crun;

std::size_t rss_anon_kib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    std::size_t kb = 0;
    if (key == "RssAnon:" && in >> kb)
      return kb;
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The reason of the sandbox's `failed` event, once there is one.
std::optional<std::string> failure_of(nd::node& n, const std::string& id) {
  for (const auto& e : events_of(n.log(), id))
    if (auto* f = std::get_if<ev::failed>(&e.body))
      return f->reason;
  return std::nullopt;
}

ac::sandbox_status status_of(nd::node& n, const std::string& id) {
  auto p = std::make_shared<std::promise<ac::command_reply>>();
  auto f = p->get_future();
  n.plane().query(id, "t1", [p](ac::command_reply r) { p->set_value(std::move(r)); });
  return f.get().state.status;
}

struct attack {
  std::string mode;
  std::string reason; // what the failed event must say
  bool needs_exec;    // the host must ask for something before the agent can fail it
  std::string id;
  std::future<ac::op_result<ev::exec_finished>> exec;
};

ac::exec_request exec_request_of(std::vector<std::string> argv, std::uint64_t max_output = 0) {
  ac::exec_request x;
  x.argv = std::move(argv);
  x.cwd = "/";
  x.timeout = 60s;
  x.max_output_bytes = max_output;
  return x;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_agent, *utf::precondition(postgres_installed) *
                                       utf::precondition(runtime_can_run{k_kind}))

BOOST_AUTO_TEST_CASE(a_hostile_agent_fails_its_own_sandbox_and_slows_no_other) {
  node_dir dir;
  nd::node n(node_config_for(dir, {k_kind}, false));
  n.start();
  auto make = [&] {
    auto r = n.call("", create_command(k_kind));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
    BOOST_REQUIRE(r.state.status == sandbox_status::running);
    return r.state.sandbox_id;
  };
  const std::string healthy = make();
  // An exec of `true` through the node: its latency in ms, or why it failed (for the
  // healthy loop's thread, which makes no assertion of its own).
  auto timed_exec = [&](const std::string& id) -> std::pair<double, std::string> {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = exec_through(n, id, exec_request_of({"true"}));
    const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok())
      return {ms, r.failure->message};
    if (r.value.exit_code != 0)
      return {ms, "exit code " + std::to_string(r.value.exit_code)};
    return {ms, {}};
  };
  auto exec_ms = [&](const std::string& id) {
    auto [ms, why] = timed_exec(id);
    BOOST_REQUIRE_MESSAGE(why.empty(), "exec in " << id << ": " << why);
    return ms;
  };
  std::vector<double> before;
  for (int i = 0; i < 20; ++i)
    before.push_back(exec_ms(healthy));

  std::vector<attack> attacks;
  for (auto [mode, reason, needs_exec] : std::vector<std::tuple<std::string, std::string, bool>>{
         {"garbage", "broke the protocol", false},
         {"huge", "a frame of 4294967280 bytes (at most 1048576)", false},
         {"partial", "did not finish a frame within", false},
         {"silent", "did not answer a spawn", true},
         {"flood", "more than the exec's output cap", true},
         {"connections", "connections to its socket within 10 s", false}}) {
    attack a;
    a.mode = mode;
    a.reason = reason;
    a.needs_exec = needs_exec;
    attacks.push_back(std::move(a));
  }
  const std::string program = file_bytes(beside_this_binary("hostile_agent"));
  BOOST_REQUIRE(!program.empty());
  auto* d = n.driver(k_kind);
  for (auto& a : attacks) {
    a.id = make();
    BOOST_REQUIRE(d->write_file(a.id, "/workspace/hostile", program, 0755).ok());
  }
  const auto rss_before = rss_anon_kib();
  std::atomic<bool> attacking{true};
  std::vector<double> during;
  std::vector<std::string> healthy_failures;
  auto healthy_loop = std::async(std::launch::async, [&] {
    while (attacking) {
      auto [ms, why] = timed_exec(healthy);
      during.push_back(ms);
      if (!why.empty())
        healthy_failures.push_back(why);
    }
  });
  for (auto& a : attacks)
    run_in(n, k_kind, a.id,
           {"/bin/sh", "-c", "/workspace/hostile " + a.mode + " >/dev/null 2>&1 &"});
  for (auto& a : attacks) {
    // The program says it is the agent (the host welcomed it) before anything is asked of it.
    BOOST_TEST_REQUIRE(eventually([&] {
                         auto mark = d->read_file(a.id, "/tmp/hostile." + a.mode);
                         return (mark.ok() && mark.value() == "agent\n") ||
                                failure_of(n, a.id).has_value();
                       }),
                       a.mode << ": the program never became the agent");
    if (a.needs_exec)
      a.exec = std::async(std::launch::async, [&n, id = a.id] {
        return exec_through(n, id, exec_request_of({"cat", "/dev/zero"}, 64u << 20));
      });
  }
  std::size_t rss_peak = rss_before;
  for (auto& a : attacks) {
    std::optional<std::string> why;
    BOOST_TEST(eventually(
                 [&] {
                   rss_peak = std::max(rss_peak, rss_anon_kib());
                   why = failure_of(n, a.id);
                   return why.has_value();
                 },
                 60s),
               a.mode << ": the sandbox was never reported failed");
    if (!why)
      continue;
    BOOST_TEST_MESSAGE(a.mode << ": " << *why);
    BOOST_TEST(why->find("the agent of sandbox " + a.id) != std::string::npos, *why);
    BOOST_TEST(why->find(a.reason) != std::string::npos, a.mode << ": " << *why);
    if (a.exec.valid()) {
      auto r = a.exec.get();
      BOOST_TEST(!r.ok(), a.mode << ": the exec on a hostile agent succeeded");
      // It ends with the agent's failure, or (when the sandbox's failed event came first and
      // ended the exec) as an exec no longer running; never with a result of the hostile agent.
      if (!r.ok())
        BOOST_TEST((r.failure->message.find("agent") != std::string::npos ||
                    r.failure->message.find("is not running") != std::string::npos),
                   r.failure->message);
    }
    // Nothing of the sandbox runs on, the hostile program included.
    BOOST_TEST(eventually([&] { return sandbox_processes(a.id).empty(); }),
               a.mode << ": processes outlived the failure");
    BOOST_TEST((status_of(n, a.id) == sandbox_status::failed), a.mode);
  }
  attacking = false;
  healthy_loop.get();
  BOOST_TEST_MESSAGE("healthy sandbox: exec `true` through the node, median "
                     << median(before) << " ms before the attacks, " << median(during)
                     << " ms over " << during.size() << " execs during them");
  // The healthy sandbox was served all along (no exec of it failed or hung), and after.
  BOOST_TEST(healthy_failures.empty(), (healthy_failures.empty() ? "" : healthy_failures[0]));
  BOOST_TEST(during.size() >= 5u);
  exec_ms(healthy);
  BOOST_TEST_MESSAGE("anonymous RSS of the node " << rss_before
                                                  << " KiB before the attacks, at most " << rss_peak
                                                  << " KiB during them");
  // The flood alone pushed 64 MiB through the host, the huge frame claimed 4 GiB.
  BOOST_TEST(rss_peak - rss_before < 48u * 1024u);
  // A new sandbox works on the same node.
  const std::string fresh = make();
  exec_ms(fresh);
  n.stop();
}

BOOST_AUTO_TEST_SUITE_END()
