// The attack suite through the node: a real sandboxd process on one runtime (this file is
// built once for crun and once for runsc), attacked through the C++ client as a tenant
// would, each attack asserting it fails:
//   - template names that traverse (`../../../../proc/self/root`, `/etc`, `a/../../x`, a
//     NUL) are invalid_argument at create and make nothing (no sandbox listed, nothing new
//     in the runtime's data directory);
//   - a file written with mode 04755 has no setuid bit (the API's stat, `stat` inside, the
//     host's file in the layer);
//   - inside: a seccomp filter (crun: "Seccomp: 2"), not the host's identity map, and new
//     user namespaces and mounts fail;
//   - a sandbox with a 64 MiB disk has its writes refused when full while another sandbox
//     still writes;
//   - an exec timeout ends a double-forked, setsid'd process too;
//   - list_dir of a directory larger than the node's cap says it is truncated;
//   - host paths through /proc/1/root and `..` are not readable by read_file or exec;
//   - the operator's check (scripts/check-boundary) sees the node's sandboxes through the
//     driver's entry under /run/sandboxd (the node's data directory is 0700, or 0710 for the
//     embedded PostgreSQL's group: not searchable by others) and passes, and fails when a
//     sandbox is running but its overlay is not found.
// One daemon for the binary.
#define BOOST_TEST_MODULE boundary_e2e
#include "tests/e2e/api_e2e_support.hpp"

#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <set>
#include <sys/stat.h>

using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::errc;
namespace fs = std::filesystem;

namespace {

// The runtime under attack: SANDBOXD_E2E_RUNTIME (crun unless it says runsc), set by the
// ctest entry (test_boundary_e2e_crun, test_boundary_e2e_runsc: one binary, run twice).
const std::string k_runtime = [] {
  const char* r = std::getenv("SANDBOXD_E2E_RUNTIME");
  return std::string(r && std::string(r) == "runsc" ? "runsc" : "crun");
}();
const bool k_crun = k_runtime == "crun";

boost::test_tools::assertion_result runtime_can_run(utf::test_unit_id id) {
  auto r = crun_can_run(id);
  if (r && !k_crun && !runsc_runs()) {
    r = false;
    r.message() << "runsc cannot run sandboxes here: "
                << *node::runtime_unavailable(events::runtime_kind::runsc);
  }
  return r;
}

daemon_process& daemon() {
  static daemon_process d({"--runtime", k_runtime, "--default-runtime", k_runtime});
  return d;
}

std::string runtime_data() {
  return daemon().data() + "/runtimes/" + k_runtime;
}

api::client client() {
  return connect(daemon(), daemon().token());
}

std::string make_sandbox(api::client& c, std::uint32_t disk_mib = 0) {
  auto o = crun_sandbox(128, k_runtime);
  o.limits.disk_mib = disk_mib;
  return must(c.create(o), "create on " + k_runtime).id;
}

// Every path under `dir` (relative), directories included.
std::set<std::string> tree(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec))
    out.insert(fs::relative(it->path(), dir).string());
  return out;
}

std::set<std::string> listed_ids(api::client& c) {
  api::list_filter f;
  f.include_deleted = true;
  f.limit = 1000;
  std::set<std::string> ids;
  for (const auto& row : must(c.list(f), "list").rows)
    ids.insert(row.id);
  return ids;
}

// The mount point of sandbox `id`'s overlay, from this process's mountinfo: below the
// driver's entry under /run/sandboxd when the node's data directory is not searchable.
std::string merged_mount(const std::string& id) {
  std::string line;
  for (std::istringstream m(read_text("/proc/self/mountinfo")); std::getline(m, line);)
    if (line.find("/sandboxes/" + id + "/merged ") != std::string::npos) {
      std::istringstream fields(line);
      std::string skip, mp;
      fields >> skip >> skip >> skip >> skip >> mp;
      return mp;
    }
  return "";
}

// The directory the driver works through (its data directory, or the entry binding it).
std::string driver_path(const std::string& id) {
  const std::string mp = merged_mount(id);
  const std::string tail = "/sandboxes/" + id + "/merged";
  return mp.size() > tail.size() ? mp.substr(0, mp.size() - tail.size()) : "";
}

// Host processes whose command line is exactly `argv`.
int host_processes_running(const std::vector<std::string>& argv) {
  std::string want;
  for (const auto& a : argv)
    want += a + '\0';
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    if (!std::isdigit(static_cast<unsigned char>(e.path().filename().string()[0])))
      continue;
    if (read_text(e.path().string() + "/cmdline") == want)
      ++n;
  }
  return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(boundary, *utf::precondition(runtime_can_run))

BOOST_AUTO_TEST_CASE(template_names_that_traverse_are_refused_and_make_nothing) {
  auto c = client();
  // The base template exists once a sandbox was made: what follows must add nothing.
  // (The list is a read model, projected from the log: each snapshot waits for a sandbox
  // made just before it, so a sandbox a refused create had logged would be in the second.)
  const auto first = make_sandbox(c);
  BOOST_TEST_REQUIRE(eventually([&] { return listed_ids(c).count(first) > 0; }, 30s));
  const auto ids = listed_ids(c);
  const auto sandboxes = tree(runtime_data() + "/sandboxes");
  const auto templates = tree(runtime_data() + "/templates");
  for (const std::string& name :
       {std::string("../../../../proc/self/root"), std::string("/etc"), std::string("a/../../x"),
        std::string("base\0/../../etc", 15), std::string("..")}) {
    auto o = crun_sandbox(128, k_runtime);
    o.template_name = name;
    must_fail(c.create(o), errc::invalid_argument, "create with template '" + name + "'");
  }
  BOOST_TEST((tree(runtime_data() + "/sandboxes") == sandboxes));
  BOOST_TEST((tree(runtime_data() + "/templates") == templates));
  const auto marker = make_sandbox(c);
  BOOST_TEST_REQUIRE(eventually([&] { return listed_ids(c).count(marker) > 0; }, 30s));
  api::list_filter all;
  all.include_deleted = true;
  all.limit = 1000;
  std::string added;
  for (const auto& row : must(c.list(all), "list").rows)
    if (row.id != marker && !ids.count(row.id))
      added += row.id + " (" + row.state + ", template '" + row.template_name + "') ";
  BOOST_TEST(added == "", "listed after the refused creates: " << added);
  must(c.remove(first), "delete");
  must(c.remove(marker), "delete");
}

BOOST_AUTO_TEST_CASE(a_setuid_mode_written_through_the_api_is_dropped) {
  auto c = client();
  const auto id = make_sandbox(c);
  bool sent = false;
  must(c.write_file(id, "/workspace/suid", 04755,
                    [&](std::string& chunk) {
                      if (sent)
                        return api::source_step::end;
                      chunk = "#!/bin/sh\nid\n";
                      sent = true;
                      return api::source_step::chunk;
                    }),
       "write_file 04755");
  const auto info = must(c.stat(id, "/workspace/suid"), "stat");
  BOOST_TEST((info.mode & 07000) == 0u, std::oct << info.mode);
  BOOST_TEST((info.mode & 0777) == 0755u, std::oct << info.mode);
  BOOST_TEST(must_shell(c, id, "stat -c %a /workspace/suid").out == "755\n");
  // The host's file in the sandbox's layer.
  const std::string host = driver_path(id) + "/layers/" + id + "/upper/workspace/suid";
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(host.c_str(), &st) == 0, host);
  BOOST_TEST((st.st_mode & 07000) == 0u, std::oct << st.st_mode);
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_CASE(inside_there_is_a_filter_no_host_identity_and_no_new_namespaces_or_mounts) {
  auto c = client();
  const auto id = make_sandbox(c);
  if (k_crun)
    BOOST_TEST(must_shell(c, id, "grep Seccomp: /proc/self/status").out == "Seccomp:\t2\n");
  if (k_crun) {
    // Inside is the host kernel's view: the map must not be the host's identity.
    const auto map = must_shell(c, id, "cat /proc/self/uid_map").out;
    std::istringstream f(map);
    std::uint64_t inner = 1, outer = 0, count = 0;
    f >> inner >> outer >> count;
    BOOST_TEST(map.find("4294967295") == std::string::npos, map);
    BOOST_TEST(outer != 0u, map);
  } else {
    // Inside is gVisor's own kernel (its root namespace maps 0 0 4294967295 to itself);
    // the identity that matters is that of runsc's host processes for the sandbox.
    int seen = 0;
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string cmd = read_text(e.path().string() + "/cmdline");
      if (!std::isdigit(static_cast<unsigned char>(e.path().filename().string()[0])) ||
          cmd.find("runsc-") == std::string::npos ||
          cmd.find("/sandboxes/" + id) == std::string::npos)
        continue;
      ++seen;
      const auto map = read_text(e.path().string() + "/uid_map");
      BOOST_TEST(map.find("4294967295") == std::string::npos, e.path() << ": " << map);
      BOOST_TEST(read_text(e.path().string() + "/status").find("\nUid:\t0\t") == std::string::npos,
                 e.path() << " runs as host root");
    }
    BOOST_TEST(seen > 0, "no runsc host process of " << id);
  }
  for (const char* attempt : {"unshare -U true", "unshare -U -r true", "mount -t tmpfs x /mnt",
                              "mount --bind /etc /mnt"}) {
    auto r = must(shell(c, id, attempt), attempt);
    BOOST_TEST(r.exit_code != 0, attempt << " succeeded: " << r.out << r.err);
  }
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_CASE(a_full_disk_refuses_its_writes_while_another_sandbox_writes) {
  auto c = client();
  const auto small = make_sandbox(c, 64);
  const auto other = make_sandbox(c);
  auto dd = must(
    shell(c, small, "dd if=/dev/zero of=/workspace/fill bs=1M count=200 2>&1; echo rc=$?"), "dd");
  BOOST_TEST(dd.out.find("rc=0") == std::string::npos, dd.out);
  BOOST_TEST(
    (dd.out.find("quota") != std::string::npos || dd.out.find("space") != std::string::npos),
    dd.out);
  // Full: a write through the API is refused too.
  auto w = write_all(c, small, "/workspace/more", std::string(4u << 20, 'x'));
  BOOST_TEST(!w.ok());
  if (!w.ok())
    BOOST_TEST(w.code() == errc::resource_exhausted, to_string(w.code())
                                                       << ": " << w.err().message);
  // Another sandbox keeps writing, through the API and inside.
  must(write_all(c, other, "/workspace/ok", std::string(4u << 20, 'y')), "write in the other");
  must_shell(c, other, "dd if=/dev/zero of=/workspace/fill bs=1M count=100");
  must(c.remove(small), "delete");
  must(c.remove(other), "delete");
}

BOOST_AUTO_TEST_CASE(an_exec_timeout_ends_a_double_forked_process) {
  auto c = client();
  const auto id = make_sandbox(c);
  api::exec_options o;
  o.argv = {"sh", "-c", "(setsid sleep 317 &) ; sleep 317"};
  o.timeout = std::chrono::seconds(1);
  const auto r = must(c.exec(id, o, {}), "exec with a 1 s timeout");
  BOOST_TEST(r.timed_out);
  // Neither sleep is left, inside or (crun: the processes are the host's) on the host.
  BOOST_TEST(must_shell(c, id, "ps -o pid,args | grep -c '[s]leep 317' || true").out == "0\n");
  if (k_crun)
    BOOST_TEST(host_processes_running({"sleep", "317"}) == 0);
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_CASE(list_dir_past_the_cap_says_it_is_truncated) {
  auto c = client();
  const auto id = make_sandbox(c);
  // The driver's cap is 10000 entries a listing (runtime/driver.hpp).
  must_shell(c, id, "mkdir /workspace/many && cd /workspace/many && seq 1 10005 | xargs touch");
  const auto all = must(c.list_dir(id, "/workspace/many"), "list_dir");
  BOOST_TEST(all.truncated);
  BOOST_TEST(all.entries.size() <= 10000u);
  const auto five = must(c.list_dir(id, "/workspace/many", 5), "list_dir limit 5");
  BOOST_TEST(five.truncated);
  BOOST_TEST(five.entries.size() == 5u);
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_CASE(host_paths_are_not_reachable_through_proc_or_dot_dot) {
  auto c = client();
  const auto id = make_sandbox(c);
  const std::string host_shadow = read_text("/etc/shadow");
  BOOST_TEST_REQUIRE(!host_shadow.empty());
  for (const char* path : {"/proc/1/root/etc/shadow", "/proc/self/root/etc/shadow",
                           "/../../../../etc/shadow", "/proc/1/root/../../etc/shadow"}) {
    auto r = read_all(c, id, path);
    BOOST_TEST(!r.ok(), path << " was read" << (r.ok() ? ": " + r.value().substr(0, 60) : ""));
    auto s = must(shell(c, id, std::string("cat ") + path), path);
    BOOST_TEST(s.exit_code != 0, path << ": " << s.out.substr(0, 60));
    BOOST_TEST(s.out.find(host_shadow.substr(0, host_shadow.find('\n'))) == std::string::npos);
  }
  must(c.remove(id), "delete");
}

// scripts/check-boundary on the node's runtime data directory: its sandboxes are found
// through the driver's entry (their overlays and processes are under /run/sandboxd), so
// it passes naming them; with a running sandbox's overlay gone it fails.
BOOST_AUTO_TEST_CASE(the_operators_check_sees_the_nodes_sandboxes_through_the_entry) {
  auto c = client();
  const auto id = make_sandbox(c);
  must(write_all(c, id, "/workspace/f", "x"), "write");
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(daemon().data().c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0001) == 0u); // not searchable by others: the case to see through
  BOOST_TEST(driver_path(id) != runtime_data(), "the driver works through an entry");
  const std::string check =
    source_dir() + "/scripts/check-boundary " + shell_quote(runtime_data()) + " 2>&1";
  auto good = run_shell(check);
  BOOST_TEST(good.exit_code == 0, good.output);
  BOOST_TEST(good.output.find("FAIL") == std::string::npos, good.output);
  BOOST_TEST(good.output.find(id + "/merged: ") != std::string::npos, good.output);
  BOOST_TEST(good.output.find("seccomp 2") != std::string::npos, good.output);
  // The check run where the running sandbox's overlay is not mounted (a private mount
  // namespace without it: the daemon's view is untouched) must fail, not pass blind.
  const std::string mp = merged_mount(id);
  BOOST_TEST_REQUIRE(!mp.empty(), "no overlay of " << id << " in mountinfo");
  auto blind = run_shell("unshare -m --propagation private sh -c 'umount -l \"$0\" && " +
                         source_dir() + "/scripts/check-boundary \"$1\"' " + shell_quote(mp) + " " +
                         shell_quote(runtime_data()) + " 2>&1");
  BOOST_TEST(blind.exit_code == 1, blind.output);
  BOOST_TEST(blind.output.find("FAIL  sandbox " + id +
                               " is running but its merged is not mounted") != std::string::npos,
             blind.output);
  must(c.remove(id), "delete");
}

BOOST_AUTO_TEST_SUITE_END()
