// Crash loop: a child process runs the actor system under a mixed workload and is
// SIGKILLed at a random moment; after every kill, recovery runs and the test checks that
// every acknowledged command's events are in the log, that no sandbox is left in a
// transitional state, and that no runtime sandbox is orphaned (or missing).
// Built twice: hollow driver (50 rounds) and crun (SANDBOXD_CRASH_LOOP_CRUN, fewer rounds).
#define BOOST_TEST_MODULE crash_loop
#include <boost/test/unit_test.hpp>

#include "actors/recovery.hpp"
#include "events/file_log.hpp"
#include "runtime/hollow_driver.hpp"
#include "runtime/oci_driver.hpp"
#include "tests/actors/actor_harness.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <sys/stat.h>

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

using namespace sandboxd::test;
using sandboxd::actors::sandbox_status;

namespace {

#ifdef SANDBOXD_CRASH_LOOP_CRUN
constexpr const char* k_driver = "crun";
constexpr int k_rounds = 8;
constexpr int k_min_ms = 400, k_max_ms = 1500;
#else
constexpr const char* k_driver = "hollow";
constexpr int k_rounds = 50;
constexpr int k_min_ms = 60, k_max_ms = 400;
#endif

std::unique_ptr<runtime::driver> make_driver(const std::string& dir) {
#ifdef SANDBOXD_CRASH_LOOP_CRUN
  runtime::oci_options o;
  o.runtime = runtime::oci_runtime::crun;
  o.data_dir = dir + "/runtime";
  return std::make_unique<runtime::oci_driver>(o);
#else
  return std::make_unique<runtime::hollow_driver>(runtime::hollow_options{dir + "/runtime", {}});
#endif
}

pid_t spawn_worker(const std::string& dir, int seed) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open((dir + "/worker.out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string s = std::to_string(seed);
    ::execl(SANDBOXD_CRASH_LOOP_WORKER, SANDBOXD_CRASH_LOOP_WORKER, k_driver, dir.c_str(),
            s.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

bool is_transitional(sandbox_status s) {
  return s == sandbox_status::creating || s == sandbox_status::pausing ||
         s == sandbox_status::resuming || s == sandbox_status::deleting;
}

} // namespace

BOOST_AUTO_TEST_CASE(sigkilled_actor_system_recovers_every_acknowledged_command) {
#ifdef SANDBOXD_CRASH_LOOP_CRUN
  if (auto why = runtime::oci_unavailable(runtime::oci_runtime::crun)) {
    BOOST_TEST_MESSAGE("skipped: crun cannot run sandboxes here: " << *why);
    return;
  }
#endif
  temp_dir dir("crash-loop");
  ::chmod(dir.path().c_str(), 0711); // sandboxes reach their root through it
  // If the test fails or its binary dies, the sandboxes the workers left are removed too:
  // containers, overlay mounts, then the directory.
  const std::string q = shell_quote(dir.path());
  guardian cleanup("for rt in crun runsc; do s=" + q + "/runtime/state/$rt; [ -d \"$s\" ] || " +
                   "continue; for id in $($rt --root=\"$s\" list --quiet); do unshare -m sh -c " +
                   "'umount /sys/fs/cgroup/unified 2>/dev/null; $0 --root=\"$1\" delete " +
                   "--force \"$2\"' $rt \"$s\" \"$id\"; done; done >/dev/null 2>&1; " +
                   "awk '{print $5}' /proc/self/mountinfo | grep -F " +
                   shell_quote(dir.path() + "/") +
                   " | sort -r | while read m; do umount -l \"$m\"; done; rm -rf " + q);
  std::mt19937 rng(20261130);
  std::uint64_t acks_checked = 0, finished = 0, failed = 0, orphans = 0, max_sandboxes = 0;
  for (int round = 0; round < k_rounds; ++round) {
    const pid_t child = spawn_worker(dir.path(), round);
    BOOST_REQUIRE(child > 0);
    std::this_thread::sleep_for(
      std::chrono::milliseconds(k_min_ms + rng() % (k_max_ms - k_min_ms)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status), "round " << round
                                                        << ": the worker ended by itself; see "
                                                        << dir / "worker.out");

    ev::file_log log(ev::file_log_options{dir / "log", 4});
    auto driver = make_driver(dir.path());
    const auto now =
      std::chrono::time_point_cast<ev::nanoseconds>(std::chrono::system_clock::now());
    auto rec = ac::recover(log, *driver, dir / "data/snapshots", now);
    finished += rec.report.finished.size();
    failed += rec.report.failed.size();
    for (const auto& f : rec.report.failed) {
      auto evs = events_of(log, f);
      if (!evs.empty())
        if (auto* x = std::get_if<ev::failed>(&evs.back().body))
          BOOST_TEST_MESSAGE("round " << round << ": recovery failed " << f << " ("
                                      << ev::to_string(x->step) << "): " << x->reason);
    }
    orphans += rec.report.orphans_removed.size();
    max_sandboxes = std::max<std::uint64_t>(max_sandboxes, rec.sandboxes.size());

    std::map<std::string, sandbox_status> status_of;
    std::map<std::string, std::uint64_t> events_in_log;
    for (const auto& e : rec.sandboxes) {
      status_of[e.sandbox_id] = e.status;
      events_in_log[e.sandbox_id] = e.offsets.size();
      BOOST_TEST(!is_transitional(e.status),
                 "round " << round << ": " << e.sandbox_id << " left " << ac::to_string(e.status));
    }
    // Every acknowledged command's events are in the log (sequences are dense from 1).
    std::ifstream acks(dir / "acks");
    std::string id;
    std::uint64_t seq = 0;
    while (acks >> id >> seq) {
      ++acks_checked;
      BOOST_TEST(events_in_log[id] >= seq,
                 "round " << round << ": " << id << " acknowledged at sequence " << seq
                          << " but the log holds " << events_in_log[id] << " events");
    }
    // The runtime holds exactly the sandboxes that should be there.
    auto listed = driver->list();
    BOOST_REQUIRE(listed.ok());
    std::set<std::string> in_runtime;
    for (const auto& i : listed.value()) {
      in_runtime.insert(i.id);
      auto s = status_of.find(i.id);
      BOOST_TEST((s != status_of.end() && s->second != sandbox_status::deleted),
                 "round " << round << ": runtime sandbox " << i.id << " is orphaned");
    }
    for (const auto& [sid, s] : status_of)
      if (s == sandbox_status::running || s == sandbox_status::paused)
        BOOST_TEST(in_runtime.count(sid) == 1u, "round " << round << ": " << sid << " is "
                                                         << ac::to_string(s)
                                                         << " but the runtime has no such sandbox");
  }
  BOOST_TEST_MESSAGE(k_driver << ": " << k_rounds << " rounds, " << acks_checked
                              << " acknowledgements checked, up to " << max_sandboxes
                              << " sandboxes, " << finished << " steps finished and " << failed
                              << " failed by recovery, " << orphans << " orphans removed");
  BOOST_TEST(acks_checked > 0u);
  // Leave nothing running behind (crun containers outlive the temp directory otherwise).
  auto driver = make_driver(dir.path());
  if (auto all = driver->list())
    for (const auto& i : all.value())
      driver->remove(i.id);
}
