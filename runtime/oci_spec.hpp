// oci_spec — the OCI runtime documents a sandbox is run with: the bundle's
// config.json (root filesystem, limits, namespaces, the idle init process) and the
// process.json of one exec. Pure functions; the drivers write what they return.
//
// Every sandbox gets, as Docker's and Kubernetes' defaults and tighter:
// - no terminal (runsc needs that); its own user namespace (its ids 0-65535 are the host
//   ids of its range, id_map.hpp), pid, network (loopback only, or the namespace of its
//   link: sandbox_link.hpp), ipc, uts, mount and cgroup namespaces;
// - capabilities CHOWN, DAC_OVERRIDE, FOWNER, SETUID, SETGID, KILL and NET_BIND_SERVICE
//   only (what package managers and servers in the templates need; all of them count only
//   inside its user namespace), no new privileges;
// - the seccomp profile of seccomp_profile.hpp;
// - Docker's masked paths (plus /proc/asound, /proc/interrupts, /proc/timer_stats and
//   /sys/devices/virtual/powercap) and read-only paths, /proc mounted nosuid, noexec,
//   nodev, /sys read-only;
// - rlimits: no core dumps, 1024 open files, processes per user at twice the pids limit
//   (4096 without one): a backstop behind the pids cgroup, which is the limit;
// - all devices denied but the standard ones the runtimes add, and the limits as cgroup v1
//   values (memory limit, CFS quota over a 100 ms period, pids.max).
#pragma once

#include "runtime/driver.hpp"
#include "runtime/exec_user.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::runtime {

struct bundle_params {
  std::string rootfs;       // absolute path of the mounted overlay
  std::string cgroups_path; // e.g. /sandboxd/<instance>-<id>
  runtime::limits limits;
  std::uint32_t id_base = 0; // host uid and gid of the sandbox's root; 0: no user namespace
  // Host path of the exec guard (exec_guard.hpp), bound read-only into the sandbox; empty:
  // none.
  std::string exec_guard;
  // The sandbox's network namespace (sandbox_link.hpp) to join instead of a private one,
  // and the resolv.conf bound read-only over /etc/resolv.conf; empty: loopback only.
  std::string netns_path;
  std::string resolv_conf;
  // Host directory of the agent's socket (agent_hub.hpp), bound read-only at
  // /dev/.sandboxd; with it (and the guard) the sandbox's first process is the agent,
  // without it the idle shell of idle_init_args.
  std::string agent_dir;
  // Whose kernel applies the seccomp filter (seccomp_profile.hpp): gVisor's under runsc.
  bool in_gvisor = false;
};

// The capabilities every sandbox process gets (bounding, effective and permitted).
const std::vector<std::string>& sandbox_capabilities();
// The paths masked (made empty) and made read-only inside every sandbox.
const std::vector<std::string>& masked_paths();
const std::vector<std::string>& readonly_paths();

// The process every sandbox runs while idle: a shell that sleeps, reaps the orphans of
// exec'd processes and exits on SIGTERM.
std::vector<std::string> idle_init_args();
// The first process of a sandbox with an agent: the guard's program as the agent.
std::vector<std::string> agent_init_args();

// The environment of one exec, as its process gets it: PATH and HOME=/root, then
// `request.env` in order (a later value of a name replaces an earlier one). Checks argv,
// env and cwd as make_process_json does (invalid_argument, never echoing a value).
outcome<std::vector<std::string>> exec_environment(const exec_request& request);

std::string make_config_json(const bundle_params& params);

// invalid_argument when argv is empty, an env name is empty or holds '=', or a string
// is not UTF-8 (OCI documents are JSON). `pids` is the sandbox's pids limit (its
// RLIMIT_NPROC, as in config.json); with `guarded` the program runs under the exec guard
// with the request's timeout. With `user` (not root) the process runs as that uid, gid and
// supplementary groups, with no capability (its bounding set stays the sandbox's).
outcome<std::string> make_process_json(const exec_request& request, std::uint32_t pids,
                                       bool guarded, const exec_user* user = nullptr);

} // namespace sandboxd::runtime
