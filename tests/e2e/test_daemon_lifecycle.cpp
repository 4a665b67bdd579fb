// sandboxd's own life end to end, a process on a fresh data directory (crun sandboxes, the
// embedded PostgreSQL; the file log, or the real Kafka broker in the _kafka build):
//   - kill -9 while a client creates sandboxes, runs execs and writes files; a restart on
//     the same data directory has every acknowledged call's effect, no sandbox left in a
//     transitional state, a bill and an audit log that cover the session, and an audit
//     chain that verifies;
//   - SIGTERM exits 0 and leaves nothing: no PostgreSQL of the data directory, no sandbox
//     process, no mount under the data directory;
//   - SIGTERM while an exec without a timeout runs (in the foreground and in the
//     background) still exits promptly, and the exec's outcome is recorded as killed.
#define BOOST_TEST_MODULE daemon_lifecycle
#include "tests/e2e/api_e2e_support.hpp"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::errc;

namespace {

std::vector<std::string> daemon_flags() {
  auto flags = log_flags();
  for (const auto& f : {"--runtime", "crun"})
    flags.push_back(f);
  return flags;
}

// What a client was told succeeded.
struct acknowledged {
  std::mutex mu;
  std::vector<std::string> sandboxes;
  std::map<std::pair<std::string, std::string>, std::string> files; // (sandbox, path) -> content
  std::map<std::string, std::string> deleted;                       // sandbox -> ""
};

// Creates sandboxes, writes files through the file API and through execs, deletes every
// third sandbox, until a call fails (the daemon is gone); records what was acknowledged.
void workload(const daemon_process& d, acknowledged& ack, std::atomic<int>& rounds, int worker) {
  auto c = api::client::connect({d.address(), d.token()});
  if (!c.ok())
    return;
  for (int i = 0;; ++i) {
    auto sb = c->create(crun_sandbox(64));
    if (!sb.ok())
      return;
    const std::string id = sb->id;
    {
      std::lock_guard l(ack.mu);
      ack.sandboxes.push_back(id);
    }
    const std::string tag = std::to_string(worker) + "-" + std::to_string(i);
    auto w = write_all(*c, id, "/workspace/api-" + tag, "api " + tag);
    if (!w.ok())
      return;
    {
      std::lock_guard l(ack.mu);
      ack.files[{id, "/workspace/api-" + tag}] = "api " + tag;
    }
    auto x = shell(*c, id, "echo exec " + tag + " > /workspace/exec-" + tag);
    if (!x.ok() || x->exit_code != 0)
      return;
    {
      std::lock_guard l(ack.mu);
      ack.files[{id, "/workspace/exec-" + tag}] = "exec " + tag + "\n";
    }
    if (i % 3 == 2) {
      if (!c->remove(id).ok())
        return;
      std::lock_guard l(ack.mu);
      ack.deleted[id] = "";
    }
    ++rounds;
  }
}

bool transitional(const std::string& state) {
  return state == "creating" || state == "pausing" || state == "resuming" || state == "deleting";
}

// Mounts of `dir`: mounted under it, or mounted from it elsewhere (the runtimes bind their
// directories to short paths under /run/sandboxd), and every mount beneath those.
std::vector<std::string> mounts_under(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> all; // (root, mount point)
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    all.emplace_back(root, point);
  }
  std::vector<std::string> tops{dir}, out;
  for (const auto& [root, point] : all)
    if (root.rfind(dir, 0) == 0)
      tops.push_back(point);
  for (const auto& [root, point] : all)
    if (std::any_of(tops.begin(), tops.end(),
                    [&, p = point](const std::string& t) { return p.rfind(t, 0) == 0; }))
      out.push_back(point);
  return out;
}

// Nothing of the daemon's is left: no process working in or naming the data directory (its
// PostgreSQL included), no process in a sandbox's cgroups, no mount under the directory.
void expect_nothing_left(const daemon_process& d, const std::vector<std::string>& sandboxes) {
  BOOST_TEST(processes_under(d.data()).empty(), "processes left under " << d.data());
  for (const auto& id : sandboxes)
    BOOST_TEST(sandbox_processes(id).empty(), "processes left in sandbox " << id);
  const auto left = mounts_under(d.data());
  BOOST_TEST(left.empty(), "mounts left: " << (left.empty() ? "" : left.front()));
}

} // namespace

BOOST_AUTO_TEST_SUITE(lifecycle, *utf::precondition(crun_can_run))

BOOST_AUTO_TEST_CASE(kill_9_mid_workload_loses_no_acknowledged_call) {
  daemon_process d(daemon_flags());
  acknowledged ack;
  std::atomic<int> rounds{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w)
    workers.emplace_back([&, w] { workload(d, ack, rounds, w); });
  // Kill it in the middle of things: after a few rounds, while calls are in flight.
  BOOST_TEST_REQUIRE(eventually([&] { return rounds >= 6; }, 120s));
  d.kill9();
  for (auto& t : workers)
    t.join();
  BOOST_TEST_MESSAGE(ack.sandboxes.size()
                     << " creates, " << ack.files.size() << " writes and " << ack.deleted.size()
                     << " deletes acknowledged before kill -9");
  d.restart();

  auto c = connect(d, d.token());
  // No sandbox stays in a transitional state.
  std::map<std::string, std::string> states;
  BOOST_TEST(eventually(
    [&] {
      states.clear();
      for (const auto& id : ack.sandboxes) {
        auto g = c.get(id);
        states[id] = g.ok() ? g->state : to_string(g.code());
      }
      return std::none_of(states.begin(), states.end(),
                          [](const auto& s) { return transitional(s.second); });
    },
    120s));
  for (const auto& id : ack.sandboxes) {
    BOOST_TEST_CONTEXT("sandbox " << id << " is " << states[id]) {
      if (ack.deleted.count(id))
        BOOST_TEST(states[id] == "not_found");
      else
        BOOST_TEST((states[id] == "running" || states[id] == "paused"));
    }
  }
  // Every acknowledged write is there (the sandboxes that exist serve reads).
  for (const auto& [where, content] : ack.files) {
    if (ack.deleted.count(where.first))
      continue;
    auto got = read_all(c, where.first, where.second);
    BOOST_TEST_CONTEXT(where.first << ":" << where.second) {
      BOOST_TEST(got.ok(), (got.ok() ? "" : got.err().message));
      if (got.ok())
        BOOST_TEST(*got == content);
    }
  }
  // The session ends (a running sandbox's compute interval is billed once it closes); the
  // bill then has a line for every sandbox of the session, the audit log rows for each, and
  // the audit chain verifies.
  for (const auto& id : ack.sandboxes)
    if (!ack.deleted.count(id))
      must(c.remove(id), "delete " + id);
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
  const std::int64_t hour = 3600ll * 1'000'000'000;
  std::set<std::string> billed, audited;
  BOOST_TEST(eventually(
    [&] {
      auto bill = c.bill("dev", 0, (now_ns / hour + 2) * hour);
      if (!bill.ok())
        return false;
      billed.clear();
      for (const auto& l : bill->lines)
        billed.insert(l.sandbox_id);
      return std::all_of(ack.sandboxes.begin(), ack.sandboxes.end(),
                         [&](const auto& id) { return billed.count(id) > 0; });
    },
    60s));
  for (const auto& id : ack.sandboxes) {
    api::audit_query q;
    q.tenant = "dev";
    q.sandbox_id = id;
    auto rows = must(c.audit(q), "audit of " + id);
    std::set<std::string> actions;
    for (const auto& r : rows.rows)
      actions.insert(r.action);
    BOOST_TEST(!rows.rows.empty(), "no audit rows for " << id);
    BOOST_TEST(billed.count(id) == 1u, "no bill line for " << id);
  }
  auto check = must(c.audit_verify("dev"), "audit verify");
  BOOST_TEST(check.checked_rows > 0u);
  BOOST_TEST(check.problems.empty(),
             (check.problems.empty() ? "" : check.problems.front().message));

  // The restarted daemon still works, and a SIGTERM then leaves nothing behind.
  const auto fresh = must(c.create(crun_sandbox(64)), "create after restart").id;
  BOOST_TEST(must_shell(c, fresh, "echo alive").out == "alive\n");
  const int status = d.stop();
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "status " << status);
  auto all = ack.sandboxes;
  all.push_back(fresh);
  expect_nothing_left(d, all);
}

// The exec without a timeout runs `sleep 100000` (never ends by itself), one in the
// foreground (a client waiting on it) and one in the background.
BOOST_AUTO_TEST_CASE(sigterm_exits_0_promptly_during_endless_execs_and_leaves_nothing) {
  daemon_process d(daemon_flags());
  auto c = connect(d, d.token());
  const auto paused = must(c.create(crun_sandbox(64)), "create").id;
  must(write_all(c, paused, "/workspace/kept", "kept"), "write");
  must(c.pause(paused, events::pause_mode::filesystem), "pause");
  const auto id = must(c.create(crun_sandbox(64)), "create").id;
  const auto background = must(c.start(id, {.argv = {"sleep", "100000"}}), "start").exec_id;
  result<api::exec_result> foreground = error{errc::internal, "not answered"};
  std::thread waiting([&] {
    auto other = api::client::connect({d.address(), d.token()});
    if (other.ok())
      foreground = other->exec(id, {.argv = {"sleep", "100000"}}, {});
  });
  BOOST_TEST_REQUIRE(eventually([&] {
    auto execs = c.execs(id);
    return execs.ok() && execs->size() == 2u;
  }));

  const auto t0 = std::chrono::steady_clock::now();
  const int status = d.stop(); // SIGKILL after 60 s
  const auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  waiting.join();
  BOOST_TEST_MESSAGE("sandboxd stopped in " << took << " s");
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0),
             "sandboxd did not exit 0 by itself on SIGTERM (status " << status << ")");
  // The client waiting on the foreground exec got an answer, not a hang.
  BOOST_TEST(!foreground.ok());
  expect_nothing_left(d, {id, paused});

  // After a restart both execs are over, and the log says they were killed (never that they
  // succeeded); the sandboxes are back as they were.
  d.restart();
  auto again = connect(d, d.token());
  std::vector<events::exec_finished> finished;
  for (const auto& e : must(again.history(id), "history"))
    if (auto* f = std::get_if<events::exec_finished>(&e.event.body))
      finished.push_back(*f);
  BOOST_TEST_REQUIRE(finished.size() >= 2u, "the endless execs have no recorded outcome");
  bool background_seen = false;
  for (const auto& f : finished) {
    if (f.exec_id == background)
      background_seen = true;
    BOOST_TEST_CONTEXT("exec " << f.exec_id << ": exit " << f.exit_code << ", signal " << f.signal
                               << ", outcome " << static_cast<int>(f.outcome)) {
      // Interrupted (sandboxd stopped while it ran), or completed as killed: by the signal
      // itself, or as the exit status 128 + 9 of the process that waited on it.
      const bool killed = f.outcome == events::op_outcome::completed &&
                          (f.signal == SIGKILL || f.exit_code == 128 + SIGKILL);
      BOOST_TEST((f.outcome == events::op_outcome::interrupted || killed));
    }
  }
  BOOST_TEST(background_seen);
  BOOST_TEST(must(again.get(id), "get").state == "running");
  BOOST_TEST(must(again.get(paused), "get").state == "paused");
  BOOST_TEST(must(read_all(again, paused, "/workspace/kept"), "read") == "kept");
  BOOST_TEST(d.stop() == 0);
  expect_nothing_left(d, {id, paused});
}

BOOST_AUTO_TEST_SUITE_END()
