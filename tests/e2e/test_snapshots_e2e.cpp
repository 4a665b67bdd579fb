// Snapshots and forks end to end (docs/snapshots.md): a sandboxd process (crun, and runsc where
// it runs; the embedded PostgreSQL and the file log) driven by the C++ client and sandboxctl:
//   - a snapshot of a running sandbox while a process rewrites a file continuously holds a
//     whole generation of it each time (the processes are frozen for the instant);
//   - ten forks of one snapshot each change a file of their own and see no other's change,
//     nor does the sandbox the snapshot was taken of; their files are their own root's;
//   - snapshots outlive their sandbox and a kill -9 of sandboxd, are listed, shown, forked
//     and deleted by sandboxctl (--json), and a deleted one is gone from the pool;
//   - the tenant's snapshot quota answers RESOURCE_EXHAUSTED naming it.
// One daemon for the binary (the quota case has its own).
#define BOOST_TEST_MODULE snapshots_e2e
#include "cli/exit_codes.hpp"
#include "tests/e2e/api_e2e_support.hpp"

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::errc;

namespace {

struct shared_daemon {
  temp_dir config{"snap-config"};
  daemon_process d{[&] {
    auto flags = log_flags();
    for (auto f : runtime_flags())
      flags.push_back(f);
    flags.push_back("--tokens-file");
    flags.push_back(write_tokens_file(config.path()));
    return flags;
  }()};
};

shared_daemon& shared() {
  static shared_daemon s;
  return s;
}

std::vector<std::string> runtimes() {
  std::vector<std::string> r{"crun"};
  if (runsc_runs())
    r.push_back("runsc");
  return r;
}

// The snapshot's tree on the host.
std::string snapshot_upper(const daemon_process& d, const std::string& runtime,
                           const std::string& snap) {
  return pool_snapshots(d, runtime) + "/" + snap + "/upper";
}

// Whether `text` is one whole generation of the writer below: `lines` lines, all the same.
bool whole_generation(const std::string& text, std::size_t lines) {
  std::istringstream in(text);
  std::string first, line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (n == 0)
      first = line;
    else if (line != first)
      return false;
    ++n;
  }
  return n == lines && !first.empty() && !text.empty() && text.back() == '\n';
}

} // namespace

BOOST_AUTO_TEST_SUITE(snapshots, *utf::precondition(crun_can_run))

// A process rewrites /w.txt continuously (a generation: `yes N | head` into a temporary file,
// renamed over it: many writes, then one rename). Each snapshot of the running sandbox holds a
// whole generation: never a renamed file missing data written before the rename.
BOOST_AUTO_TEST_CASE(a_snapshot_of_a_running_sandbox_holds_a_consistent_tree) {
  auto& d = shared().d;
  auto c = connect(d, k_token_acme);
  constexpr std::size_t k_lines = 200000; // about 1.3 MiB a generation
  for (const auto& rt : runtimes()) {
    BOOST_TEST_CONTEXT(rt) {
      auto sb = must(c.create(crun_sandbox(256, rt)), "create on " + rt);
      api::exec_options w;
      w.argv = {"sh", "-c",
                "i=0; while :; do i=$((i+1)); yes $i | head -n " + std::to_string(k_lines) +
                  " > /w.tmp; mv /w.tmp /w.txt; done"};
      auto writer = must(c.start(sb.id, w), "start the writer");
      must_shell(c, sb.id, "while [ ! -e /w.txt ]; do sleep 0.05; done");
      std::string first_seen, last_seen;
      for (int i = 0; i < 12; ++i) {
        auto s = must(c.snapshot(sb.id, "consistency " + std::to_string(i)), "snapshot");
        BOOST_TEST(s.sandbox_id == sb.id);
        BOOST_TEST(s.runtime == rt);
        BOOST_TEST(s.layer_bytes > 0u);
        BOOST_TEST(s.referenced_bytes > 0u);
        const auto text = read_text(snapshot_upper(d, rt, s.id) + "/w.txt");
        BOOST_TEST(whole_generation(text, k_lines),
                   "snapshot " << s.id << " holds a torn /w.txt of " << text.size() << " bytes");
        if (i == 0)
          first_seen = text.substr(0, text.find('\n'));
        last_seen = text.substr(0, text.find('\n'));
        must(c.delete_snapshot(s.id), "delete the snapshot");
      }
      // The writer went on between the snapshots (and was thawed after each).
      BOOST_TEST(first_seen != last_seen);
      auto after = must_shell(c, sb.id, "head -n 1 /w.txt").out;
      BOOST_TEST(after != first_seen + "\n");
      must(c.kill_exec(sb.id, writer.exec_id, 9), "kill the writer");
      must(c.remove(sb.id), "delete");
    }
  }
}

// Ten forks of one snapshot: each writes its own file and changes a shared one; none sees
// another's change, and the sandbox the snapshot was taken of keeps its own files.
BOOST_AUTO_TEST_CASE(ten_forks_of_one_snapshot_see_only_their_own_changes) {
  auto& d = shared().d;
  auto c = connect(d, k_token_acme);
  for (const auto& rt : runtimes()) {
    BOOST_TEST_CONTEXT(rt) {
      auto base = must(c.create(crun_sandbox(128, rt)), "create on " + rt);
      must_shell(c, base.id,
                 "mkdir -p /work && echo base > /work/shared.txt && "
                 "echo 1 > /work/kept.txt && chmod 4755 /work/kept.txt");
      auto snap = must(c.snapshot(base.id, "before the fan-out"), "snapshot");
      // The source changes after the snapshot: no fork sees it.
      must_shell(c, base.id, "echo later > /work/shared.txt");
      std::vector<std::string> forks;
      for (int i = 0; i < 10; ++i) {
        api::create_options o;
        o.limits.memory_mib = 128;
        o.from_snapshot = snap.id;
        auto f = must(c.create(o), "fork " + std::to_string(i));
        BOOST_TEST(f.runtime == rt);
        BOOST_TEST(f.template_name == base.template_name);
        forks.push_back(f.id);
      }
      for (int i = 0; i < 10; ++i)
        must_shell(c, forks[i],
                   "echo fork" + std::to_string(i) + " > /work/shared.txt && echo " +
                     std::to_string(i) + " > /work/own-" + std::to_string(i) + ".txt");
      for (int i = 0; i < 10; ++i) {
        BOOST_TEST_CONTEXT("fork " << i) {
          auto r = must_shell(c, forks[i],
                              "cat /work/shared.txt; ls /work | tr '\\n' ' '; echo; "
                              "stat -c '%u %g %a' /work/kept.txt /work/shared.txt");
          const std::string i_s = std::to_string(i);
          BOOST_TEST(r.out == "fork" + i_s + "\nkept.txt own-" + i_s +
                                ".txt shared.txt \n0 0 4755\n0 0 644\n");
        }
      }
      BOOST_TEST(must(read_all(c, base.id, "/work/shared.txt"), "read") == "later\n");
      BOOST_TEST(must_shell(c, base.id, "ls /work | tr '\\n' ' '").out == "kept.txt shared.txt ");
      // The snapshot itself is unchanged by them all.
      BOOST_TEST(read_text(snapshot_upper(d, rt, snap.id) + "/work/shared.txt") == "base\n");
      for (const auto& f : forks)
        must(c.remove(f), "delete fork");
      must(c.remove(base.id), "delete");
      must(c.delete_snapshot(snap.id), "delete the snapshot");
    }
  }
}

// A snapshot outlives its sandbox and a kill -9 of sandboxd; sandboxctl lists, shows, forks
// from and deletes it; a paused sandbox (either mode) is snapshotted as it stands.
BOOST_AUTO_TEST_CASE(snapshots_outlive_their_sandbox_and_a_kill_9) {
  temp_dir config{"snap-restart"};
  auto flags = log_flags();
  for (auto f : runtime_flags())
    flags.push_back(f);
  flags.push_back("--tokens-file");
  flags.push_back(write_tokens_file(config.path()));
  daemon_process d(flags);
  ctl_options as_acme;
  as_acme.env.emplace("SANDBOXD_TOKEN", k_token_acme);
  auto ctl_ok = [&](const std::vector<std::string>& args) {
    auto r = ctl(d, args, as_acme);
    std::string line;
    for (const auto& w : args)
      line += " " + w;
    if (r.exit_code != 0) {
      const auto log = d.log();
      BOOST_TEST_MESSAGE("daemon log: " << log.substr(log.size() > 6000 ? log.size() - 6000 : 0));
    }
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "sandboxctl" << line << ": " << r);
    return r;
  };
  std::vector<std::pair<std::string, std::string>> taken; // (runtime, snapshot id)
  for (const auto& rt : runtimes()) {
    auto id = ctl_ok({"create", "--runtime", rt, "--memory", "128"}).out;
    id.erase(id.find_last_not_of('\n') + 1);
    ctl_ok({"exec", id, "--", "sh", "-c", "echo kept-" + rt + " > /marker.txt"});
    auto s = ctl_ok({"--json", "snapshot", "create", id, "--name", "running"}).doc();
    BOOST_TEST(s["name"] == "running");
    BOOST_TEST(s["sandbox_id"] == id);
    taken.emplace_back(rt, s["id"].get<std::string>());
    for (const char* mode : {"filesystem", "memory"}) {
      ctl_ok({"pause", id, "--mode", mode});
      auto p = ctl_ok({"--json", "snapshot", "create", id, "--name", mode}).doc();
      taken.emplace_back(rt, p["id"].get<std::string>());
      ctl_ok({"resume", id});
    }
    ctl_ok({"delete", id});
  }
  BOOST_TEST(ctl_ok({"--json", "snapshot", "list"}).doc()["snapshots"].size() == taken.size());
  d.kill9();
  d.restart();
  auto listed = ctl_ok({"--json", "snapshot", "list"}).doc();
  BOOST_TEST(listed["snapshots"].size() == taken.size());
  for (const auto& [rt, snap] : taken) {
    BOOST_TEST_CONTEXT(rt << " " << snap) {
      auto shown = ctl_ok({"--json", "snapshot", "show", snap}).doc();
      BOOST_TEST(shown["runtime"] == rt);
      auto fork = ctl_ok({"--json", "create", "--from-snapshot", snap}).doc();
      const auto fid = fork["id"].get<std::string>();
      auto cat = ctl_ok({"exec", fid, "--", "cat", "/marker.txt"});
      BOOST_TEST(cat.out == "kept-" + rt + "\n");
      auto again = ctl_ok({"--json", "fork", fid}).doc(); // a fork of the fork
      auto cat2 = ctl_ok({"exec", again["id"].get<std::string>(), "--", "cat", "/marker.txt"});
      BOOST_TEST(cat2.out == "kept-" + rt + "\n");
      ctl_ok({"delete", again["id"].get<std::string>()});
      ctl_ok({"delete", fid});
    }
  }
  // Deleted: gone from the list and from the pool (the fork's own snapshots too).
  const auto left = ctl_ok({"--json", "snapshot", "list"}).doc(); // kept: the loop reads it
  BOOST_TEST(left["snapshots"].size() > taken.size()); // the forks' own snapshots are there too
  for (const auto& s : left["snapshots"])
    ctl_ok({"snapshot", "rm", s["id"].get<std::string>()});
  BOOST_TEST(ctl_ok({"--json", "snapshot", "list"}).doc()["snapshots"].empty());
  for (const auto& [rt, snap] : taken) {
    struct stat st {};
    BOOST_TEST(::stat(snapshot_upper(d, rt, snap).c_str(), &st) != 0, snap << " is still there");
  }
  // The log names each step: the intent and outcome of each snapshot, each deletion.
  std::size_t requested = 0, completed = 0, deleted = 0;
  auto log = ctl(d, {"--json", "events"}); // the whole log: the operator's token
  BOOST_REQUIRE_MESSAGE(log.exit_code == 0, log);
  for (const auto& e : log.lines()) {
    const auto type = e.value("kind", "");
    requested += type == "snapshot_requested";
    completed += type == "snapshot_taken" && e["payload"].value("outcome", "") == "completed";
    deleted += type == "snapshot_deleted";
  }
  BOOST_TEST(requested == completed);
  BOOST_TEST(completed >= taken.size());
  BOOST_TEST(deleted == completed);
}

// The tenant's snapshot quota: the one past it is RESOURCE_EXHAUSTED naming the quota, and
// nothing is taken; after a deletion there is room again.
BOOST_AUTO_TEST_CASE(the_snapshot_quota_is_resource_exhausted) {
  temp_dir config{"snap-quota"};
  daemon_process d({"--runtime", "crun", "--tokens-file", write_tokens_file(config.path()),
                    "--quota-snapshots", "2"});
  auto c = connect(d, k_token_acme);
  auto sb = must(c.create(crun_sandbox()), "create");
  auto a = must(c.snapshot(sb.id), "first");
  must(c.snapshot(sb.id), "second");
  auto e = must_fail(c.snapshot(sb.id), errc::resource_exhausted, "third");
  BOOST_TEST(e.message.find("quota of 2") != std::string::npos, e.message);
  BOOST_TEST(must(c.list_snapshots(), "list").size() == 2u);
  // Another tenant's count is its own.
  auto g = connect(d, k_token_globex);
  auto gsb = must(g.create(crun_sandbox()), "create globex");
  must(g.snapshot(gsb.id), "globex's first");
  must(c.delete_snapshot(a.id), "delete one");
  must(c.snapshot(sb.id), "room again");
}

BOOST_AUTO_TEST_SUITE_END()
