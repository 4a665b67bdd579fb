// Attacks on the kernel from inside a sandbox, and the identity a sandbox has on the
// host: a seccomp filter is in force (crun: "Seccomp: 2" inside; runsc: gVisor's own
// filters on the host processes), the sandbox's root is not the host's root (crun:
// uid_map inside; both: the host uid of the runtime's processes and of the files it
// makes), new user namespaces and mounts fail, the capability set is the small one,
// Docker's masked and read-only paths and /proc flags hold, and rlimits are set.
// Built once per runtime.
#define BOOST_TEST_MODULE attack_kernel_surface
#include <boost/test/unit_test.hpp>

#include "runtime/oci_spec.hpp"
#include "tests/security/attack_fixture.hpp"

#include <algorithm>
#include <dirent.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <thread>

using namespace sandboxd::runtime;
using sandboxd::test::attack_fixture;
using sandboxd::test::driver_under_test;
using sandboxd::test::driver_usable;

namespace {

const bool is_crun = driver_under_test::kind == oci_runtime::crun;

// The host processes of a sandbox: crun's container init (its pid in the runtime's
// state) and its children; runsc's sandbox and gofer (their command lines name the
// bundle or the container id).
std::vector<pid_t> host_processes(oci_driver& d, const std::string& data, const std::string& id) {
  std::vector<pid_t> out;
  std::string cmd;
  for (const auto& a : d.runtime_command())
    cmd += sandboxd::test::shell_quote(a) + " ";
  std::string bundle = data + "/sandboxes/" + id, cid = d.cid(id);
  if (is_crun) {
    auto st = sandboxd::test::run_shell(cmd + "state " + cid + " | grep '\"pid\"' | tr -dc 0-9");
    if (!st.output.empty())
      out.push_back(std::stoi(st.output));
    return out;
  }
  DIR* proc = ::opendir("/proc");
  while (dirent* e = proc ? ::readdir(proc) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0)
      continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string line((std::istreambuf_iterator<char>(in)), {});
    if (line.find(bundle) != std::string::npos || line.find(cid) != std::string::npos)
      out.push_back(pid);
  }
  if (proc)
    ::closedir(proc);
  return out;
}

// Docker's masked and read-only paths (moby oci/defaults.go), pinned here rather than
// read from the code under test, so dropping one from the spec fails this suite.
const std::vector<std::string> k_docker_masked = {
  "/proc/acpi",       "/proc/asound",        "/proc/interrupts",  "/proc/kcore",
  "/proc/keys",       "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi",
  "/proc/timer_list", "/proc/timer_stats",   "/sys/firmware",     "/sys/devices/virtual/powercap"};
const std::vector<std::string> k_docker_readonly = {"/proc/bus", "/proc/fs", "/proc/irq",
                                                    "/proc/sys", "/proc/sysrq-trigger"};

std::string status_field(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0)
      return line.substr(key.size() + 1);
  return "";
}

struct fixture : attack_fixture {
  oci_driver& oci = static_cast<oci_driver&>(*d);

  std::string inside(const std::string& id, const std::string& script) {
    return sh(id, script).stdout_data;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(kernel_surface, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(a_seccomp_filter_is_in_force, fixture) {
  running("sec");
  std::string s = inside("sec", "grep -E '^Seccomp:' /proc/self/status");
  if (is_crun) {
    BOOST_TEST(s == "Seccomp:\t2\n");
  } else {
    // gVisor's kernel answers inside; on the host its processes run under its filters.
    auto pids = host_processes(oci, data, "sec");
    BOOST_TEST_REQUIRE(!pids.empty());
    for (pid_t p : pids)
      BOOST_TEST(status_field(p, "Seccomp") == "\t2", "host process " << p);
  }
}

BOOST_FIXTURE_TEST_CASE(the_sandbox_root_is_not_the_host_root, fixture) {
  running("ids");
  std::uint32_t base = id_base("ids");
  BOOST_TEST(base >= 65536u);
  auto r = sh("ids", "cat /proc/self/uid_map; id -u; touch /workspace/mine /etc/mine");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.stderr_data);
  if (is_crun) {
    std::istringstream f(r.stdout_data);
    std::uint64_t inner = 1, outer = 0, count = 0;
    f >> inner >> outer >> count;
    BOOST_TEST(inner == 0u);
    BOOST_TEST(outer == base);
    BOOST_TEST(count == 65536u);
    BOOST_TEST(r.stdout_data.find("4294967295") == std::string::npos, r.stdout_data);
  }
  // Whatever the sandbox's root makes belongs to its range on the host.
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat((upper("ids") + "/workspace/mine").c_str(), &st) == 0);
  BOOST_TEST(st.st_uid == base);
  BOOST_TEST(st.st_gid == base);
  BOOST_TEST_REQUIRE(::stat((upper("ids") + "/etc/mine").c_str(), &st) == 0);
  BOOST_TEST(st.st_uid == base); // in a directory of the template, too
  // The runtime's processes for the sandbox are not host root.
  auto pids = host_processes(oci, data, "ids");
  BOOST_TEST_REQUIRE(!pids.empty());
  for (pid_t p : pids) {
    std::string uid = status_field(p, "Uid");
    BOOST_TEST(uid.find("\t0\t") == std::string::npos, "host process " << p << " Uid:" << uid);
    std::ifstream map("/proc/" + std::to_string(p) + "/uid_map");
    std::string m((std::istreambuf_iterator<char>(map)), {});
    BOOST_TEST(m.find("4294967295") == std::string::npos, "host process " << p << ": " << m);
  }
}

// A tenant names the user its execs run as (a template's USER, a request's user): every such
// id is one of the sandbox's 65536, mapped into its own host range (crun: host uid = the
// sandbox's base + the uid; runsc: ids of gVisor's kernel, its host processes never change
// uid); an id past the range is refused before anything runs, and never reaches setuid.
BOOST_FIXTURE_TEST_CASE(an_exec_user_stays_inside_the_sandbox_id_range, fixture) {
  running("who");
  const std::uint32_t base = id_base("who");
  for (const char* outside :
       {"65536", "4294967295", "4294967294", "0:65536", "nobody:4294967295", "-1", "root:-1"}) {
    exec_request r;
    r.argv = {"/bin/sh", "-c", "touch /workspace/escaped"};
    r.user = outside;
    auto res = d->exec("who", r);
    BOOST_TEST((res.code() == sandboxd::errc::invalid_argument), outside);
  }
  BOOST_TEST(!d->stat("who", "/workspace/escaped").ok());
  exec_request top;
  top.argv = {"/bin/sh", "-c", "id -u; touch /tmp/top; echo $(cat /proc/self/uid_map)"};
  top.user = "65535:65535";
  auto t = d->exec("who", top);
  BOOST_TEST_REQUIRE(t.ok(), (t ? "" : t.err().message));
  BOOST_TEST(t->stdout_data.rfind("65535\n", 0) == 0, t->stdout_data);
  if (is_crun) {
    BOOST_TEST(t->stdout_data.find("\n0 " + std::to_string(base) + " 65536") != std::string::npos,
               t->stdout_data);
    // The process, seen from the host: its uid is the sandbox's base + 65535, never below the
    // base nor past the range.
    exec_request bg;
    bg.argv = {"/bin/sh", "-c", "exec sleep 4243"};
    bg.user = "nobody";
    bg.timeout = std::chrono::seconds(30);
    std::thread runner([&] { (void)d->exec("who", bg); });
    std::string uid;
    for (int i = 0; i < 200 && uid.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      DIR* proc = ::opendir("/proc");
      while (dirent* e = proc ? ::readdir(proc) : nullptr) {
        std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
        std::string line((std::istreambuf_iterator<char>(in)), {});
        if (line == std::string("sleep\0"
                                "4243\0",
                                11))
          uid = status_field(std::atoi(e->d_name), "Uid");
      }
      if (proc)
        ::closedir(proc);
    }
    const std::string host = std::to_string(base + 65534u);
    BOOST_TEST(uid == "\t" + host + "\t" + host + "\t" + host + "\t" + host, uid);
    (void)sh("who", "pkill -f 'sleep 4243'; true");
    runner.join();
  }
}

BOOST_FIXTURE_TEST_CASE(new_user_namespaces_and_mounts_fail, fixture) {
  running("ns");
  for (const char* attempt :
       {"unshare -U true", "unshare -U -r true", "unshare -m true", "unshare -n true",
        "mount -t tmpfs none /mnt", "mount -t proc proc /mnt", "mount --bind /etc /mnt",
        "umount /proc", "chroot / true", "mknod /workspace/null c 1 3"}) {
    auto r = sh("ns", std::string(attempt) + " 2>&1; echo \"rc=$?\"");
    BOOST_TEST(r.stdout_data.find("rc=0") == std::string::npos, attempt << ": " << r.stdout_data);
  }
}

BOOST_FIXTURE_TEST_CASE(the_capability_set_is_the_small_one, fixture) {
  running("caps");
  std::uint64_t want = 0;
  for (int bit : {0, 1, 3, 5, 6, 7, 10}) // CHOWN DAC_OVERRIDE FOWNER KILL SETGID SETUID NET_BIND
    want |= 1ull << bit;
  BOOST_TEST(sandbox_capabilities().size() == 7u);
  std::string s = inside("caps", "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status");
  std::istringstream f(s);
  std::string key, hex;
  int seen = 0;
  while (f >> key >> hex) {
    BOOST_TEST(std::stoull(hex, nullptr, 16) == want, key << " " << hex);
    ++seen;
  }
  BOOST_TEST(seen == 3);
}

BOOST_FIXTURE_TEST_CASE(masked_and_read_only_paths_and_proc_flags_hold, fixture) {
  running("mask");
  // The bundle the runtime was given lists every one of Docker's paths (a kernel without
  // one of them would otherwise hide its absence from the checks inside).
  std::ifstream cfg(data + "/sandboxes/mask/config.json");
  auto linux = nlohmann::json::parse(cfg).at("linux");
  auto listed = [&](const char* key, const std::string& p) {
    const auto& l = linux.at(key);
    return std::find(l.begin(), l.end(), p) != l.end();
  };
  for (const auto& p : k_docker_masked)
    BOOST_TEST(listed("maskedPaths", p), p << " is not in the bundle's maskedPaths");
  for (const auto& p : k_docker_readonly)
    BOOST_TEST(listed("readonlyPaths", p), p << " is not in the bundle's readonlyPaths");
  for (const auto& p : k_docker_masked) {
    // A masked file reads empty; a masked directory is empty (or absent under gVisor).
    auto r = sh("mask", "p=" + p +
                          "; if [ -d $p ]; then ls -A $p; elif [ -e $p ]; then "
                          "head -c 64 $p; fi 2>/dev/null; true");
    BOOST_TEST(r.stdout_data == "", p << " shows: " << r.stdout_data.substr(0, 100));
  }
  auto w = sh("mask", "echo 1 > /proc/sysrq-trigger 2>&1; echo rc=$?; "
                      "echo 1 > /proc/sys/vm/drop_caches 2>&1; echo rc=$?");
  BOOST_TEST(w.stdout_data.find("rc=0") == std::string::npos, w.stdout_data);
  if (is_crun) {
    std::string proc = inside("mask", "grep ' /proc ' /proc/self/mountinfo | head -1");
    for (const char* flag : {"nosuid", "nodev", "noexec"})
      BOOST_TEST(proc.find(flag) != std::string::npos, flag << " missing: " << proc);
    for (const auto& p : k_docker_readonly) {
      // (A path this kernel does not have is not mounted.)
      std::string line =
        inside("mask", "[ -e " + p + " ] && grep ' " + p + " ' /proc/self/mountinfo || echo none");
      BOOST_TEST((line == "none\n" || line.find(" ro,") != std::string::npos), p << ": " << line);
    }
    // The cgroup namespace: the sandbox sees its own cgroup as the root.
    BOOST_TEST(inside("mask", "cat /proc/self/cgroup").find("sandboxd") == std::string::npos);
  }
}

BOOST_FIXTURE_TEST_CASE(rlimits_bound_core_files_and_processes, fixture) {
  limits l;
  l.pids = 100;
  running("rl", l);
  // The shell's own view (getrlimit), which both kernels answer.
  BOOST_TEST(inside("rl", "ulimit -c; ulimit -n; ulimit -u") == "0\n1024\n200\n");
}

BOOST_AUTO_TEST_SUITE_END()
