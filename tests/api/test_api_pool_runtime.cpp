// test_api_pool_runtime.cpp — warm pools on the real runtimes (crun, runsc), over RPC
// (issue 31, docs/pools.md): a claimed sandbox behaves like a created one (files, exec,
// pause in both modes, resume, delete), a pooled and a cold sandbox see the same environment
// and identity (environment, hostname, machine id, user, first pid, clock; their entropy is
// their own), and once the pool is ended and the node gone nothing of them runs or is
// mounted. Skipped (with the reason) where a runtime cannot run sandboxes.
#define BOOST_TEST_MODULE api_pool_runtime
#include <boost/test/unit_test.hpp>

#include "projections/billing_meter.hpp"
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

// Every event of sandbox `id` in the log, in order.
std::vector<events::event> events_of(events::event_log& log, const std::string& id) {
  std::vector<events::event> out;
  const auto p = log.partition_for(id);
  for (std::int64_t at = 0;;) {
    auto rr = log.read(p, at, 4096);
    if (rr.records.empty())
      return out;
    for (auto& r : rr.records) {
      at = r.offset + 1;
      if (r.key != id)
        continue;
      auto d = events::decode(r.value);
      BOOST_REQUIRE(d.ok());
      out.push_back(d.get());
    }
  }
}

// The bill of a claimed sandbox, from its log: every interval is the claiming tenant's and
// starts at the claim or later; compute opens at the claim itself; nothing is the pool's.
void billed_from_the_claim(events::event_log& log, const std::string& id) {
  auto evs = events_of(log, id);
  std::optional<std::uint64_t> claim_seq;
  std::int64_t claim_ms = 0;
  for (const auto& e : evs)
    if (std::holds_alternative<events::claim_requested>(e.body)) {
      claim_seq = e.sequence;
      claim_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(e.occurred_at.time_since_epoch())
          .count();
    }
  BOOST_REQUIRE_MESSAGE(claim_seq, "sandbox " << id << " has no claim_requested in the log");
  BOOST_TEST(evs.front().tenant == events::k_pool_tenant, "the pool made it");
  std::optional<projections::meter_state> m;
  std::vector<projections::closed_interval> closed;
  for (const auto& e : evs)
    projections::meter_event(m, e, closed);
  BOOST_TEST_REQUIRE(!closed.empty());
  BOOST_TEST(m->deleted);
  bool compute = false;
  for (const auto& c : closed) {
    BOOST_TEST(c.tenant == "t", "an interval of " << c.tenant);
    BOOST_TEST(c.start_seq >= *claim_seq);
    BOOST_TEST(c.start_ms >= claim_ms);
    if (c.kind == projections::meter::compute && c.start_seq == *claim_seq)
      compute = true;
  }
  BOOST_TEST(compute, "compute opens at the claim");
}

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

void clock_is_the_hosts(api::client& c, const std::string& id);

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
      if (mode == events::pause_mode::memory)
        std::this_thread::sleep_for(5s); // frozen a while: its clock must not have stood still
      auto r = c.resume(sb->id);
      BOOST_REQUIRE_MESSAGE(r.ok(), (r ? "" : r.err().message));
      BOOST_TEST(r->state == "running");
      BOOST_TEST(run(c, sb->id, "cat /tmp/a.txt; echo $GREETING") == content + "hello\n");
      clock_is_the_hosts(c, sb->id);
    }
    BOOST_REQUIRE(c.remove(sb->id).ok());
    BOOST_TEST(!c.get(sb->id).ok());
    billed_from_the_claim(w.log, sb->id);
    w.drain();
  }
  nothing_left_of(root, cgroups);
}

// What a process in the sandbox can read about where it runs, one fact per line: what a
// program could use to tell where (and since when) it runs, and a draw of entropy.
const char* k_identity =
  "echo pid=$$; echo host=$(hostname); echo user=$(id); "
  "echo machine=$(cat /etc/machine-id 2>/dev/null || echo none); "
  "echo boot=$(cat /proc/sys/kernel/random/boot_id); "
  "echo rand=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'); "
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

// The facts in which `a` and `b` differ.
std::set<std::string> differing(const std::map<std::string, std::string>& a,
                                const std::map<std::string, std::string>& b) {
  std::set<std::string> keys, out;
  for (const auto& m : {a, b})
    for (const auto& [k, v] : m)
      keys.insert(k);
  for (const auto& k : keys) {
    auto i = a.find(k), j = b.find(k);
    if (i == a.end() || j == b.end() || i->second != j->second)
      out.insert(k);
  }
  return out;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& k : s)
    out += (out.empty() ? "" : ",") + k;
  return out;
}

// The sandbox's wall clock reads between the host's before and after the exec that reads it,
// to the second (busybox's date has no finer format), a millisecond either side for where each
// clock rounds.
void clock_is_the_hosts(api::client& c, const std::string& id) {
  using std::chrono::system_clock;
  const auto s = [](system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  const auto before = s(system_clock::now() - std::chrono::milliseconds(1));
  const auto text = run(c, id, "date +%s");
  const auto after = s(system_clock::now() + std::chrono::milliseconds(1));
  const auto t = std::stoll(text);
  BOOST_TEST(t >= before, id << " reads " << t << ", the host before " << before);
  BOOST_TEST(t <= after, id << " reads " << t << ", the host after " << after);
}

void cannot_tell_pooled_from_cold(runtime::oci_runtime kind, events::runtime_kind as) {
  pool_world w(kind, as, 2);
  w.wait_ready(2);
  // The pooled ones wait a while first: whatever differs with time would show.
  std::this_thread::sleep_for(10s);
  auto c = w.connect();
  api::create_options o;
  o.env = {{"TASK", "compare", false, std::nullopt}, {"TOKEN", "s3", true, std::nullopt}};
  std::vector<api::sandbox_info> pooled, cold;
  for (int i = 0; i < 2; ++i) {
    auto sb = c.create(o);
    BOOST_REQUIRE_MESSAGE(sb.ok(), (sb ? "" : sb.err().message));
    BOOST_REQUIRE(sb->from_pool);
    pooled.push_back(*sb);
  }
  o.no_pool = true;
  for (int i = 0; i < 2; ++i) {
    auto sb = c.create(o);
    BOOST_REQUIRE_MESSAGE(sb.ok(), (sb ? "" : sb.err().message));
    BOOST_REQUIRE(!sb->from_pool);
    cold.push_back(*sb);
  }
  // The first exec of each.
  std::vector<std::map<std::string, std::string>> p, q;
  for (const auto& sb : pooled)
    p.push_back(facts(run(c, sb.id, k_identity)));
  for (const auto& sb : cold)
    q.push_back(facts(run(c, sb.id, k_identity)));
  // What is each sandbox's own (differs between two cold ones) is each pooled one's own too,
  // and nothing else differs: two pooled sandboxes share no more than two cold ones.
  const auto own = differing(q[0], q[1]);
  BOOST_TEST(joined(differing(p[0], p[1])) == joined(own));
  BOOST_TEST(own.count("rand") == 1u, "each draws its own entropy");
  BOOST_TEST(p[0]["rand"].size() == 33u);
  // Beyond what is each sandbox's own, a pooled one sees what a cold one sees, to the pid.
  for (const auto& k : differing(p[0], q[0]))
    BOOST_TEST(own.count(k) == 1u, k << ": pooled " << p[0][k] << ", cold " << q[0][k]);
  BOOST_TEST(p[0]["env:TASK"] == "compare\n");
  BOOST_TEST(p[0]["env:TOKEN"] == "s3\n");
  BOOST_TEST_MESSAGE("each sandbox's own, pooled or cold: "
                     << joined(own) << "; hostname " << q[0]["host"] << "boot id " << p[0]["boot"]);
  // The clock is the host's in all of them, the pooled ones after their wait.
  for (const auto& sb : pooled)
    clock_is_the_hosts(c, sb.id);
  for (const auto& sb : cold)
    clock_is_the_hosts(c, sb.id);
  // Reported, not asserted: gVisor's uptime counts from the sandbox's start (docs/pools.md).
  BOOST_TEST_MESSAGE("uptime pooled: " << run(c, pooled[0].id, "cut -d' ' -f1 /proc/uptime")
                                       << "uptime cold: "
                                       << run(c, cold[0].id, "cut -d' ' -f1 /proc/uptime"));
  for (const auto* all : {&pooled, &cold})
    for (const auto& sb : *all)
      BOOST_REQUIRE(c.remove(sb.id).ok());
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
