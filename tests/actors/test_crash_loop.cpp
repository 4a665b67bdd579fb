// Crash loop: a child process runs the actor system under a mixed workload and is
// SIGKILLed at a random moment; after every kill, recovery runs and the test checks that
// every acknowledged command's own event sits at its sequence in the log (type and key
// fields), that no sequence number holds two different events, that recovery failed no
// step, that no sandbox is left in a transitional state, and that no runtime sandbox is
// orphaned (or missing). Every other round the worker's log fails appends at random, both
// not stored and maybe stored (written, lost, late).
// One binary, two ctest entries: the hollow driver (50 rounds) and, with
// SANDBOXD_CRASH_LOOP_DRIVER=crun in the environment, crun (fewer rounds).
// The randomness (kill moments, workloads, faults) comes from one printed seed;
// SANDBOXD_TEST_SEED replays it.
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
#include "tests/support/test_seed.hpp"

#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace sandboxd::test;
using sandboxd::actors::sandbox_status;

namespace {

// The driver of this run, its rounds and the range of a round's length.
struct loop_plan {
  const char* driver;
  int rounds;
  int min_ms, max_ms;
};

bool on_crun() {
  const char* v = std::getenv("SANDBOXD_CRASH_LOOP_DRIVER");
  return v && std::string(v) == "crun";
}

const loop_plan k_plan =
  on_crun() ? loop_plan{"crun", 8, 400, 1500} : loop_plan{"hollow", 50, 60, 400};
const char* const k_driver = k_plan.driver;
const int k_rounds = k_plan.rounds;
const int k_min_ms = k_plan.min_ms, k_max_ms = k_plan.max_ms;

std::unique_ptr<runtime::driver> make_driver(const std::string& dir) {
  if (on_crun()) {
    runtime::oci_options o;
    o.runtime = runtime::oci_runtime::crun;
    o.data_dir = dir + "/runtime";
    return std::make_unique<runtime::oci_driver>(o);
  }
  return std::make_unique<runtime::hollow_driver>(runtime::hollow_options{dir + "/runtime", {}});
}

// Starts the worker; with a fault seed, its log fails appends at random.
pid_t spawn_worker(const std::string& dir, std::uint64_t seed,
                   std::optional<std::uint64_t> fault_seed) {
  const std::string s = std::to_string(seed);
  const std::string f = fault_seed ? std::to_string(*fault_seed) : std::string();
  const std::string worker = sandboxd::test::beside_this_binary("crash_loop_worker");
  const pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open((dir + "/worker.out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(worker.c_str(), worker.c_str(), k_driver, dir.c_str(), s.c_str(),
            fault_seed ? f.c_str() : static_cast<char*>(nullptr), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Empty when `e` is the event an acknowledgement line describes (crash_loop_worker.cpp),
// else what differs.
std::string mismatch(const ev::event& e, const std::string& kind, std::istringstream& fields) {
  const std::string type(ev::type_name(e.body));
  if (type != kind)
    return "the log holds " + type;
  std::string a, b, c;
  if (auto* x = std::get_if<ev::created>(&e.body)) {
    fields >> a >> b >> c;
    const std::string crid = b == "-" ? std::string() : b;
    if (x->template_name != a || x->client_request_id != crid ||
        std::to_string(x->limits.memory_mib) != c)
      return "created " + x->template_name + " " + x->client_request_id + " " +
             std::to_string(x->limits.memory_mib);
  } else if (auto* p = std::get_if<ev::pause_requested>(&e.body)) {
    fields >> a;
    if (ev::to_string(p->mode) != a || p->reason != ev::pause_reason::user)
      return "pause_requested " + ev::to_string(p->mode);
  } else if (auto* d = std::get_if<ev::delete_requested>(&e.body)) {
    if (d->reason != ev::delete_reason::user)
      return "a delete_requested that no user asked for";
  } else if (auto* t = std::get_if<ev::timeout_changed>(&e.body)) {
    fields >> a;
    const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t->timeouts.idle_timeout).count();
    if (std::to_string(ms) != a)
      return "timeout_changed " + std::to_string(ms);
  } else if (auto* x = std::get_if<ev::exec_started>(&e.body)) {
    fields >> a >> b;
    if (x->exec_id != a || x->argv.empty() || x->argv[0] != b)
      return "exec_started " + x->exec_id;
  }
  if (e.principal != "worker")
    return "an event of principal " + e.principal;
  return {};
}

bool is_transitional(sandbox_status s) {
  return s == sandbox_status::creating || s == sandbox_status::pausing ||
         s == sandbox_status::resuming || s == sandbox_status::deleting;
}

boost::test_tools::assertion_result crun_usable(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (!on_crun())
    return r;
  if (auto why = runtime::oci_unavailable(runtime::oci_runtime::crun)) {
    r = false;
    r.message() << "crun cannot run sandboxes here: " << *why;
  }
  return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(sigkilled_actor_system_recovers_every_acknowledged_command,
                     *boost::unit_test::precondition(crun_usable)) {
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
  std::mt19937_64 rng(test_seed(std::string("crash_loop ") + k_driver));
  std::uint64_t acks_checked = 0, finished = 0, failed = 0, orphans = 0, max_sandboxes = 0;
  std::uint64_t duplicates = 0;
  for (int round = 0; round < k_rounds; ++round) {
    const bool faults = round % 2 == 1;
    const auto worker_seed = rng();
    const auto fault_seed = rng();
    const pid_t child = spawn_worker(
      dir.path(), worker_seed, faults ? std::optional<std::uint64_t>(fault_seed) : std::nullopt);
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
      auto h = history_of(log, f);
      std::string why = "no failed event";
      if (!h.events.empty())
        if (auto* x = std::get_if<ev::failed>(&h.events.back().body))
          why = ev::to_string(x->step) + ": " + x->reason;
      BOOST_ERROR("round " << round << ": recovery failed the step of " << f << " (" << why << ")");
    }
    orphans += rec.report.orphans_removed.size();
    max_sandboxes = std::max<std::uint64_t>(max_sandboxes, rec.sandboxes.size());

    // Every sandbox's history as readers see it; no sequence number holds two events.
    std::map<std::string, sandbox_status> status_of;
    auto history = histories_of(log);
    BOOST_TEST(history.size() == rec.sandboxes.size());
    for (const auto& e : rec.sandboxes) {
      status_of[e.sandbox_id] = e.status;
      const auto& h = history[e.sandbox_id];
      duplicates += h.duplicates;
      BOOST_TEST(h.problem.empty(), "round " << round << ": " << e.sandbox_id << ": " << h.problem);
      BOOST_TEST(h.events.size() == e.offsets.size(),
                 "round " << round << ": " << e.sandbox_id << ": recovery folded "
                          << e.offsets.size() << " events, the log holds " << h.events.size());
      BOOST_TEST(!is_transitional(e.status),
                 "round " << round << ": " << e.sandbox_id << " left " << ac::to_string(e.status));
    }
    // Every acknowledged command's own event is at its sequence.
    std::ifstream acks(dir / "acks");
    std::string line;
    while (std::getline(acks, line)) {
      std::istringstream in(line);
      std::string id, kind;
      std::uint64_t seq = 0;
      in >> id >> seq >> kind;
      ++acks_checked;
      auto h = history.find(id);
      if (h == history.end()) {
        BOOST_ERROR("round " << round << ": acknowledged " << line << " but the log has no " << id);
        continue;
      }
      const auto& evs = h->second.events;
      if (seq == 0) { // accepted without an event: the one it repeated must be there
        const std::string want = kind == "created-again" ? "created" : "delete_requested";
        std::string crid;
        in >> crid;
        bool found = false;
        for (const auto& e : evs)
          if (ev::type_name(e.body) == want)
            found = want != "created" || std::get<ev::created>(e.body).client_request_id == crid;
        BOOST_TEST(found, "round " << round << ": acknowledged " << line << " but the log of " << id
                                   << " holds no " << want);
        continue;
      }
      if (seq > evs.size()) {
        BOOST_ERROR("round " << round << ": acknowledged " << line << " but the log holds "
                             << evs.size() << " events of " << id);
        continue;
      }
      const auto why = mismatch(evs[seq - 1], kind, in);
      BOOST_TEST(why.empty(), "round " << round << ": acknowledged " << line << " but at sequence "
                                       << seq << " " << why);
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
  // The faults the workers injected, by kind (each line names one).
  std::map<std::string, std::uint64_t> injected;
  {
    std::ifstream in(dir / "faults");
    std::string kind;
    while (in >> kind)
      ++injected[kind];
  }
  BOOST_TEST_MESSAGE(k_driver << ": " << k_rounds << " rounds, " << acks_checked
                              << " acknowledgements checked, up to " << max_sandboxes
                              << " sandboxes, " << finished << " steps finished and " << failed
                              << " failed by recovery, " << orphans << " orphans removed; "
                              << "injected faults: " << injected["not_stored"] << " not stored, "
                              << injected["maybe_stored_written"] << " maybe stored (written), "
                              << injected["maybe_stored_lost"] << " (lost), "
                              << injected["maybe_stored_late"] << " (late); " << duplicates
                              << " duplicate records");
  BOOST_TEST(acks_checked > 0u);
  BOOST_TEST(injected["not_stored"] > 0u);
  BOOST_TEST(injected["maybe_stored_written"] + injected["maybe_stored_lost"] +
               injected["maybe_stored_late"] >
             0u);
  // Leave nothing running behind (crun containers outlive the temp directory otherwise).
  auto driver = make_driver(dir.path());
  if (auto all = driver->list())
    for (const auto& i : all.value())
      driver->remove(i.id);
}
