// test_api_pool_runtime.cpp — warm pools on the real runtimes (crun, runsc), over RPC
// (issue 31, docs/pools.md): a claimed sandbox behaves like a created one (files, exec,
// pause in both modes, resume, delete), a pooled and a cold sandbox see the same environment
// and identity (environment, hostname, machine id, user, first pid, clock; their entropy is
// their own), and once the pool is ended and the node gone nothing of them runs or is
// mounted. Skipped (with the reason) where a runtime cannot run sandboxes.
#define BOOST_TEST_MODULE api_pool_runtime
#include <boost/test/unit_test.hpp>

#include "tests/api/runtime_world.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

using namespace sandboxd;
using namespace std::chrono_literals;
using sandboxd::test::runs;
namespace utf = boost::unit_test;

namespace {

actors::pool_settings pool_of(events::runtime_kind as, std::uint32_t size) {
  actors::pool_settings s;
  s.key = {"base", as, {512, 1000, 512, 10240}}; // what a create with the defaults asks for
  s.size = size;
  s.maximum = size;
  s.refill_per_second = 20;
  return s;
}

// rpc_world with a warm pool of the runtime's default key.
struct pool_world : test::rpc_world {
  pool_world(runtime::oci_runtime kind, events::runtime_kind as, std::uint32_t size)
      : rpc_world(kind, as, {pool_of(as, size)}), as_(as) {}

  void wait_ready(std::uint32_t n) {
    const auto until = std::chrono::steady_clock::now() + 120s;
    for (;;) {
      auto all = plane.pools();
      if (!all.empty() && all.front().ready >= n)
        return;
      BOOST_REQUIRE_MESSAGE(
        std::chrono::steady_clock::now() < until,
        "the pool did not fill: " << (all.empty() ? "" : all.front().last_error));
      std::this_thread::sleep_for(20ms);
    }
  }
  // Ends the pool and waits until the runtime holds no sandbox.
  void drain() {
    BOOST_REQUIRE(plane.remove_pool(pool_of(as_, 0).key));
    const auto until = std::chrono::steady_clock::now() + 60s;
    for (;;) {
      auto left = driver.list();
      BOOST_REQUIRE(left.ok());
      if (left->empty())
        return;
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < until,
                            left->size() << " sandboxes left in the runtime");
      std::this_thread::sleep_for(50ms);
    }
  }

  events::runtime_kind as_;
};

std::string run(api::client& c, const std::string& id, const std::string& script,
                std::vector<events::env_var> env = {}) {
  api::exec_options e;
  e.argv = {"/bin/sh", "-c", script};
  e.env = std::move(env);
  std::string out;
  auto r = c.exec(id, e, [&](api::output_stream s, std::string_view d) {
    if (s == api::output_stream::out)
      out += d;
  });
  BOOST_REQUIRE_MESSAGE(r.ok(), (r ? "" : r.err().message));
  BOOST_TEST(r->exit_code == 0, script);
  return out;
}

// Nothing under `path` is mounted, no process names it (runsc's) or runs in one of the
// driver's cgroups (`cgroups`, the prefix of its sandboxes' cgroup paths: crun's).
void nothing_left_of(const std::string& path, const std::string& cgroups) {
  std::ifstream mounts("/proc/mounts");
  for (std::string line; std::getline(mounts, line);)
    BOOST_TEST(line.find(path) == std::string::npos, "still mounted: " << line);
  for (const auto& p : std::filesystem::directory_iterator("/proc")) {
    const auto name = p.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::string cmd, groups;
    std::getline(std::ifstream(p.path() / "cmdline"), cmd, '\xff');
    std::getline(std::ifstream(p.path() / "cgroup"), groups, '\xff');
    BOOST_TEST(cmd.find(path) == std::string::npos, "process " << name << " still runs: " << cmd);
    BOOST_TEST(groups.find(cgroups) == std::string::npos,
               "process " << name << " still runs in a sandbox's cgroup: " << cmd);
  }
}

void behaves_like_a_created_one(runtime::oci_runtime kind, events::runtime_kind as) {
  std::string root, cgroups;
  {
    pool_world w(kind, as, 1);
    root = w.dir / "";
    cgroups = w.driver.cgroup_path("");
    w.wait_ready(1);
    auto c = w.connect();
    api::create_options o;
    o.env = {{"GREETING", "hello", false, std::nullopt}};
    auto sb = c.create(o);
    BOOST_REQUIRE_MESSAGE(sb.ok(), (sb ? "" : sb.err().message));
    BOOST_TEST(sb->from_pool);
    BOOST_TEST(sb->state == "running");
    BOOST_TEST(run(c, sb->id, "echo $GREETING") == "hello\n");
    // Files: written, read back, listed; through exec and through the file calls alike.
    std::string content = "pooled\n";
    std::size_t at = 0;
    auto wrote = c.write_file(sb->id, "/tmp/a.txt", 0644, [&](std::string& chunk) {
      if (at == content.size())
        return api::source_step::end;
      chunk = content.substr(at);
      at = content.size();
      return api::source_step::chunk;
    });
    BOOST_REQUIRE_MESSAGE(wrote.ok(), (wrote ? "" : wrote.err().message));
    BOOST_TEST(run(c, sb->id, "cat /tmp/a.txt") == content);
    run(c, sb->id, "echo more > /tmp/b.txt");
    std::string back;
    BOOST_REQUIRE(
      c.read_file(sb->id, "/tmp/b.txt", [&](std::string_view d) { back.append(d); }).ok());
    BOOST_TEST(back == "more\n");
    for (auto mode : {events::pause_mode::filesystem, events::pause_mode::memory}) {
      auto p = c.pause(sb->id, mode);
      BOOST_REQUIRE_MESSAGE(p.ok(), (p ? "" : p.err().message));
      BOOST_TEST(p->state == "paused");
      auto r = c.resume(sb->id);
      BOOST_REQUIRE_MESSAGE(r.ok(), (r ? "" : r.err().message));
      BOOST_TEST(r->state == "running");
      BOOST_TEST(run(c, sb->id, "cat /tmp/a.txt; echo $GREETING") == content + "hello\n");
    }
    BOOST_REQUIRE(c.remove(sb->id).ok());
    BOOST_TEST(!c.get(sb->id).ok());
    w.drain();
  }
  nothing_left_of(root, cgroups);
}

// What a process in the sandbox can read about where it runs, one fact per line.
const char* k_identity =
  "echo pid=$$; echo host=$(hostname); echo user=$(id); "
  "echo machine=$(cat /etc/machine-id 2>/dev/null || echo none); "
  "echo init=$(tr '\\0' ' ' < /proc/1/cmdline); env | sort | sed 's/^/env:/'";

std::map<std::string, std::string> facts(const std::string& out) {
  std::map<std::string, std::string> f;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    f[line.substr(0, eq)] += eq == std::string::npos ? "" : line.substr(eq + 1) + "\n";
  }
  return f;
}

void cannot_tell_pooled_from_cold(runtime::oci_runtime kind, events::runtime_kind as) {
  pool_world w(kind, as, 1);
  w.wait_ready(1);
  // The pooled one waits a while first: whatever differs with time would show.
  std::this_thread::sleep_for(2s);
  auto c = w.connect();
  api::create_options o;
  o.env = {{"TASK", "compare", false, std::nullopt}, {"TOKEN", "s3", true, std::nullopt}};
  auto pooled = c.create(o);
  BOOST_REQUIRE_MESSAGE(pooled.ok(), (pooled ? "" : pooled.err().message));
  BOOST_REQUIRE(pooled->from_pool);
  o.no_pool = true;
  auto cold = c.create(o);
  BOOST_REQUIRE_MESSAGE(cold.ok(), (cold ? "" : cold.err().message));
  BOOST_REQUIRE(!cold->from_pool);
  // The first exec of each: same facts, to the pid.
  auto p = facts(run(c, pooled->id, k_identity));
  auto q = facts(run(c, cold->id, k_identity));
  std::set<std::string> keys;
  for (const auto& m : {p, q})
    for (const auto& [k, v] : m)
      keys.insert(k);
  for (const auto& k : keys)
    BOOST_TEST(p[k] == q[k], k << ": pooled " << p[k] << ", cold " << q[k]);
  BOOST_TEST(p["env:TASK"] == "compare\n");
  BOOST_TEST(p["env:TOKEN"] == "s3\n");
  // The clock is the host's in both (to a second), and each draws its own entropy.
  const auto host = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  for (const auto* sb : {&*pooled, &*cold}) {
    auto t = std::stoll(run(c, sb->id, "date +%s"));
    BOOST_TEST(std::llabs(t - host) <= 2, sb->id << " reads " << t << ", the host " << host);
  }
  const char* draw = "head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'";
  auto e1 = run(c, pooled->id, draw), e2 = run(c, cold->id, draw), e3 = run(c, pooled->id, draw);
  BOOST_TEST(e1.size() == 32u);
  BOOST_TEST(e1 != e2);
  BOOST_TEST(e1 != e3);
  // Reported, not asserted: gVisor's uptime counts from the sandbox's start (docs/pools.md).
  BOOST_TEST_MESSAGE("uptime pooled: " << run(c, pooled->id, "cut -d' ' -f1 /proc/uptime")
                                       << "uptime cold: "
                                       << run(c, cold->id, "cut -d' ' -f1 /proc/uptime"));
  BOOST_REQUIRE(c.remove(pooled->id).ok());
  BOOST_REQUIRE(c.remove(cold->id).ok());
  w.drain();
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_pool_runtime)

BOOST_AUTO_TEST_CASE(a_claimed_sandbox_behaves_like_a_created_one_on_crun,
                     *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::crun);
                     })) {
  behaves_like_a_created_one(runtime::oci_runtime::crun, events::runtime_kind::crun);
}

BOOST_AUTO_TEST_CASE(a_claimed_sandbox_behaves_like_a_created_one_on_runsc,
                     *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::runsc);
                     })) {
  behaves_like_a_created_one(runtime::oci_runtime::runsc, events::runtime_kind::runsc);
}

BOOST_AUTO_TEST_CASE(a_pooled_and_a_cold_sandbox_see_the_same_on_crun,
                     *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::crun);
                     })) {
  cannot_tell_pooled_from_cold(runtime::oci_runtime::crun, events::runtime_kind::crun);
}

BOOST_AUTO_TEST_CASE(a_pooled_and_a_cold_sandbox_see_the_same_on_runsc,
                     *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::runsc);
                     })) {
  cannot_tell_pooled_from_cold(runtime::oci_runtime::runsc, events::runtime_kind::runsc);
}

BOOST_AUTO_TEST_SUITE_END()
