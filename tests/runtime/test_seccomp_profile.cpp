// The default seccomp profile read as the kernel would apply it: for a system call and
// its arguments, the action of the first rule that names it and whose argument
// conditions hold, else the default action. The calls Docker's default profile denies to
// a process without CAP_SYS_ADMIN (and those sandboxd denies beyond it) are listed here,
// not taken from the profile, so dropping one from the profile fails this suite.
#define BOOST_TEST_MODULE seccomp_profile
#include <boost/test/unit_test.hpp>

#include "runtime/seccomp_profile.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

using nlohmann::json;
using sandboxd::runtime::default_seccomp_profile;
using sandboxd::runtime::seccomp_kernel;

namespace {

using args = std::array<std::uint64_t, 6>;

constexpr std::uint64_t k_clone_newuser = 0x10000000;
constexpr std::uint64_t k_clone_newns = 0x00020000;
constexpr std::uint64_t k_sigchld = 17;

bool holds(const json& cond, const args& a) {
  std::uint64_t v = a.at(cond.at("index").get<std::size_t>());
  std::uint64_t x = cond.at("value").get<std::uint64_t>();
  std::string op = cond.at("op");
  if (op == "SCMP_CMP_EQ")
    return v == x;
  if (op == "SCMP_CMP_NE")
    return v != x;
  if (op == "SCMP_CMP_LT")
    return v < x;
  if (op == "SCMP_CMP_LE")
    return v <= x;
  if (op == "SCMP_CMP_GT")
    return v > x;
  if (op == "SCMP_CMP_GE")
    return v >= x;
  if (op == "SCMP_CMP_MASKED_EQ")
    return (v & x) == cond.value("valueTwo", std::uint64_t{0});
  throw std::runtime_error("unknown seccomp op " + op);
}

// The action the profile takes for `name(a)`.
std::string action(const json& profile, const std::string& name, const args& a = {}) {
  for (const auto& rule : profile.at("syscalls")) {
    const auto& names = rule.at("names");
    if (std::find(names.begin(), names.end(), name) == names.end())
      continue;
    bool all = true;
    for (const auto& cond : rule.value("args", json::array()))
      all = all && holds(cond, a);
    if (all)
      return rule.at("action");
  }
  return profile.at("defaultAction");
}

bool denied(const std::string& act) {
  return act == "SCMP_ACT_ERRNO" || act == "SCMP_ACT_KILL" || act == "SCMP_ACT_KILL_PROCESS" ||
         act == "SCMP_ACT_KILL_THREAD";
}

} // namespace

BOOST_AUTO_TEST_CASE(the_default_action_denies_and_every_x86_view_is_covered) {
  json p = default_seccomp_profile();
  BOOST_TEST(denied(p.at("defaultAction")));
  // A filter for x86-64 alone would let the same calls through the 32-bit entry points.
  for (const char* arch : {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}) {
    const auto& a = p.at("architectures");
    BOOST_TEST((std::find(a.begin(), a.end(), arch) != a.end()), arch);
  }
}

BOOST_AUTO_TEST_CASE(what_a_program_needs_is_allowed) {
  // The evaluator can answer "allow": the denials below are the profile's, not its own.
  json p = default_seccomp_profile();
  for (const char* name : {"read", "write", "openat", "execve", "mmap", "wait4", "futex"})
    BOOST_TEST(action(p, name) == "SCMP_ACT_ALLOW", name);
  BOOST_TEST(action(p, "clone", {k_sigchld}) == "SCMP_ACT_ALLOW");
  BOOST_TEST(action(p, "socket", {2 /* AF_INET */}) == "SCMP_ACT_ALLOW");
}

BOOST_AUTO_TEST_CASE(the_kernel_surface_docker_denies_is_denied) {
  json p = default_seccomp_profile();
  for (const char* name :
       {// keyrings, BPF, userfaultfd, perf
        "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open",
        // io_uring (Docker allows it; sandboxd does not)
        "io_uring_setup", "io_uring_enter", "io_uring_register",
        // mounts, old and new API
        "mount", "umount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
        "open_tree", "move_mount", "mount_setattr",
        // kernel code and the machine
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
        "swapon", "swapoff", "acct", "quotactl", "syslog", "lookup_dcookie", "settimeofday",
        "clock_settime", "stime", "iopl", "ioperm", "create_module", "nfsservctl", "vm86",
        "vm86old", "uselib", "ustat", "sysfs", "_sysctl",
        // handles, other processes' memory
        "open_by_handle_at", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
        "pidfd_getfd", "move_pages", "migrate_pages", "mbind", "set_mempolicy", "get_mempolicy",
        "chroot"})
    BOOST_TEST(denied(action(p, name)), name << " is allowed");
}

BOOST_AUTO_TEST_CASE(new_namespaces_through_clone_unshare_and_setns_are_denied) {
  json p = default_seccomp_profile();
  // unshare(flags) and setns(fd, nstype): a new or joined user namespace, and setns with
  // nstype 0 (whatever namespace the fd is), are denied however the rules filter arguments.
  BOOST_TEST(denied(action(p, "unshare", {k_clone_newuser})));
  BOOST_TEST(denied(action(p, "unshare", {k_clone_newuser | k_clone_newns})));
  BOOST_TEST(denied(action(p, "unshare", {k_clone_newns})));
  BOOST_TEST(denied(action(p, "setns", {3, k_clone_newuser})));
  BOOST_TEST(denied(action(p, "setns", {3, 0})));
  BOOST_TEST(denied(action(p, "clone", {k_sigchld | k_clone_newuser})));
  BOOST_TEST(denied(action(p, "clone", {k_sigchld | k_clone_newns})));
  for (std::uint64_t flag : {0x02000000ull, 0x04000000ull, 0x08000000ull, 0x20000000ull,
                             0x40000000ull}) // CGROUP UTS IPC PID NET
    BOOST_TEST(denied(action(p, "clone", {flag})), std::hex << flag);
  // clone3's flags are in memory no filter reads: it must fail (ENOSYS makes libc fall
  // back to clone, where the flags are checked).
  BOOST_TEST(denied(action(p, "clone3")));
}

// Where clone3 is refused, libc falls back to clone only on ENOSYS: an EPERM leaves every
// process unable to start a thread. Linux honours errnoRet; gVisor answers every errno
// action with EPERM, so there the refusal is SCMP_ACT_TRACE (ENOSYS with no tracer, and no
// process of the sandbox may ptrace), and the profile still allows neither ptrace nor an
// unfiltered clone.
BOOST_AUTO_TEST_CASE(clone3_fails_with_enosys_under_either_kernel) {
  const auto rule_for = [](const json& p) {
    for (const auto& r : p.at("syscalls"))
      if (r.at("names") == json::array({"clone3"}))
        return r;
    return json();
  };
  const json on_linux = rule_for(default_seccomp_profile(seccomp_kernel::linux_kernel));
  BOOST_TEST(on_linux.value("action", "") == "SCMP_ACT_ERRNO");
  BOOST_TEST(on_linux.value("errnoRet", 0) == 38 /* ENOSYS */);
  const json gvisor = default_seccomp_profile(seccomp_kernel::gvisor);
  BOOST_TEST(rule_for(gvisor).value("action", "") == "SCMP_ACT_TRACE");
  BOOST_TEST(denied(action(gvisor, "ptrace")));
  BOOST_TEST(denied(action(gvisor, "clone", {k_sigchld | k_clone_newuser})));
  BOOST_TEST(action(gvisor, "clone", {k_sigchld}) == "SCMP_ACT_ALLOW");
}

BOOST_AUTO_TEST_CASE(vsock_and_unknown_personalities_are_denied) {
  json p = default_seccomp_profile();
  BOOST_TEST(denied(action(p, "socket", {40 /* AF_VSOCK */})));
  BOOST_TEST(action(p, "personality", {0}) == "SCMP_ACT_ALLOW");
  BOOST_TEST(denied(action(p, "personality", {0x0040000 /* ADDR_NO_RANDOMIZE */})));
}
