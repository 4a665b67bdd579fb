// oci_spec — the OCI runtime documents a sandbox is run with: the bundle's
// config.json (root filesystem, limits, namespaces, the idle init process) and the
// process.json of one exec. Pure functions; the drivers write what they return.
//
// Every sandbox gets: no terminal (runsc needs that), its own pid, network (loopback
// only), ipc, uts and mount namespaces, Docker's default capabilities without
// CAP_MKNOD and CAP_NET_RAW, no new privileges, all devices denied but the standard
// ones the runtimes add, and the limits as cgroup v1 values (memory limit, CFS quota
// over a 100 ms period, pids.max).
#pragma once

#include "runtime/driver.hpp"

#include <string>
#include <vector>

namespace sandboxd::runtime {

struct bundle_params {
  std::string rootfs;       // absolute path of the mounted overlay
  std::string cgroups_path; // e.g. /sandboxd/<instance>-<id>
  runtime::limits limits;
};

// The process every sandbox runs while idle: a shell that sleeps, reaps the orphans of
// exec'd processes and exits on SIGTERM.
std::vector<std::string> idle_init_args();

std::string make_config_json(const bundle_params& params);

// invalid_argument when argv is empty, an env name is empty or holds '=', or a string
// is not UTF-8 (OCI documents are JSON).
outcome<std::string> make_process_json(const exec_request& request);

} // namespace sandboxd::runtime
