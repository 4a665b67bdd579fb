#include "runtime/runsc_binary.hpp"

#include "runtime/child_process.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

std::string cache_dir() {
  if (const char* c = std::getenv("SANDBOXD_CACHE"); c && *c)
    return c;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/sandboxd";
}

// What `runsc flags` says: its platforms and whether it has --oci-seccomp.
std::string flags_of(const std::string& path) {
  process_options o;
  o.argv = {path, "flags"};
  o.timeout = std::chrono::seconds(30);
  auto r = run_process(o);
  return r.out + r.err;
}

} // namespace

runsc_binary find_runsc(const std::string& explicit_path) {
  static std::mutex mu;
  static std::map<std::string, runsc_binary> known;
  std::lock_guard<std::mutex> g(mu);
  if (auto it = known.find(explicit_path); it != known.end())
    return it->second;
  runsc_binary b;
  std::string pinned = cache_dir() + "/runsc-" + k_runsc_version + "/runsc";
  const char* env = std::getenv("SANDBOXD_RUNSC");
  if (!explicit_path.empty()) {
    b.path = explicit_path;
    b.note = "runsc " + b.path + " (configured)";
  } else if (env && *env) {
    b.path = env;
    b.note = "runsc " + b.path + " (SANDBOXD_RUNSC)";
  } else if (::access(pinned.c_str(), X_OK) == 0) {
    b.path = pinned;
    b.note = "runsc " + b.path + " (gvisor.dev/gvisor " + k_runsc_version + ", built by setup)";
  } else {
    b.path = find_program("runsc");
    b.note = "runsc " + (b.path.empty() ? std::string("(none)") : b.path) +
             " from PATH: the build of gvisor.dev/gvisor is missing at " + pinned +
             " (run scripts/setup)";
  }
  std::string flags = b.path.empty() ? "" : flags_of(b.path);
  b.current = flags.find("systrap") != std::string::npos;
  b.oci_seccomp = flags.find("-oci-seccomp") != std::string::npos;
  if (!b.path.empty() && !b.current)
    b.note += std::string("; it is an older runsc: ptrace platform, shared file access, no "
                          "child subreapers (exec timeouts miss double-forked processes)") +
              (b.oci_seccomp ? "" : ", no seccomp filter inside gVisor");
  known[explicit_path] = b;
  return b;
}

} // namespace sandboxd::runtime
