#include "runtime/oci_spec.hpp"

#include "runtime/exec_guard.hpp"
#include "runtime/exec_guard/agent_wire.h"
#include "runtime/seccomp_profile.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::runtime {
namespace {

using nlohmann::json;

const char* k_default_path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const std::vector<std::string> k_capabilities = {
  "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FOWNER",          "CAP_SETUID",
  "CAP_SETGID", "CAP_KILL",         "CAP_NET_BIND_SERVICE"};

const std::vector<std::string> k_masked = {
  "/proc/acpi",       "/proc/asound",        "/proc/interrupts",  "/proc/kcore",
  "/proc/keys",       "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi",
  "/proc/timer_list", "/proc/timer_stats",   "/sys/firmware",     "/sys/devices/virtual/powercap"};

const std::vector<std::string> k_readonly = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                             "/proc/sysrq-trigger"};

json capabilities() {
  return {{"bounding", k_capabilities},
          {"effective", k_capabilities},
          {"permitted", k_capabilities},
          {"inheritable", json::array()},
          {"ambient", json::array()}};
}

json rlimit(const char* type, std::uint64_t value) {
  return {{"type", type}, {"hard", value}, {"soft", value}};
}

json process(const std::vector<std::string>& args, const std::vector<std::string>& env,
             const std::string& cwd, std::uint32_t pids) {
  return {{"terminal", false},
          {"user", {{"uid", 0}, {"gid", 0}}},
          {"args", args},
          {"env", env},
          {"cwd", cwd},
          {"capabilities", capabilities()},
          {"rlimits",
           {rlimit("RLIMIT_NOFILE", 1024), rlimit("RLIMIT_CORE", 0),
            rlimit("RLIMIT_NPROC", pids > 0 ? 2ull * pids : 4096)}},
          {"noNewPrivileges", true}};
}

} // namespace

const std::vector<std::string>& sandbox_capabilities() {
  return k_capabilities;
}

const std::vector<std::string>& masked_paths() {
  return k_masked;
}

const std::vector<std::string>& readonly_paths() {
  return k_readonly;
}

std::vector<std::string> idle_init_args() {
  return {"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 86400 & wait $!; done"};
}

std::vector<std::string> agent_init_args() {
  return {k_exec_guard_in_sandbox, "--agent", SBA_SOCKET_DIR "/" SBA_SOCKET_NAME};
}

std::string make_config_json(const bundle_params& p) {
  json resources = {{"devices", {{{"allow", false}, {"access", "rwm"}}}}};
  if (p.limits.memory_bytes > 0)
    resources["memory"] = {{"limit", p.limits.memory_bytes}};
  if (p.limits.cpu_millis > 0)
    resources["cpu"] = {{"quota", static_cast<std::int64_t>(p.limits.cpu_millis) * 100},
                        {"period", 100000}};
  if (p.limits.pids > 0)
    resources["pids"] = {{"limit", p.limits.pids}};
  json mounts = json::array({
    {{"destination", "/proc"},
     {"type", "proc"},
     {"source", "proc"},
     {"options", {"nosuid", "noexec", "nodev"}}},
    {{"destination", "/dev"},
     {"type", "tmpfs"},
     {"source", "tmpfs"},
     {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
    {{"destination", "/dev/pts"},
     {"type", "devpts"},
     {"source", "devpts"},
     {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
    {{"destination", "/dev/shm"},
     {"type", "tmpfs"},
     {"source", "shm"},
     {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
    {{"destination", "/sys"},
     {"type", "sysfs"},
     {"source", "sysfs"},
     {"options", {"nosuid", "noexec", "nodev", "ro"}}},
  });
  if (!p.exec_guard.empty())
    mounts.push_back({{"destination", k_exec_guard_in_sandbox},
                      {"type", "bind"},
                      {"source", p.exec_guard},
                      {"options", {"bind", "ro", "nosuid", "nodev"}}});
  const bool agent = !p.exec_guard.empty() && !p.agent_dir.empty();
  if (agent)
    mounts.push_back({{"destination", SBA_SOCKET_DIR},
                      {"type", "bind"},
                      {"source", p.agent_dir},
                      {"options", {"bind", "ro", "nosuid", "nodev", "noexec"}}});
  if (!p.resolv_conf.empty())
    mounts.push_back({{"destination", "/etc/resolv.conf"},
                      {"type", "bind"},
                      {"source", p.resolv_conf},
                      {"options", {"bind", "ro", "nosuid", "nodev", "noexec"}}});
  json net = {{"type", "network"}};
  if (!p.netns_path.empty())
    net["path"] = p.netns_path;
  json namespaces = {{{"type", "pid"}},   net,
                     {{"type", "ipc"}},   {{"type", "uts"}},
                     {{"type", "mount"}}, {{"type", "cgroup"}}};
  json linux = {{"resources", resources},
                {"cgroupsPath", p.cgroups_path},
                {"maskedPaths", k_masked},
                {"readonlyPaths", k_readonly},
                {"seccomp", default_seccomp_profile(p.in_gvisor ? seccomp_kernel::gvisor
                                                                : seccomp_kernel::linux_kernel)}};
  if (p.id_base != 0) {
    namespaces.push_back({{"type", "user"}});
    json map = {{{"containerID", 0}, {"hostID", p.id_base}, {"size", 65536}}};
    linux["uidMappings"] = map;
    linux["gidMappings"] = map;
  }
  linux["namespaces"] = std::move(namespaces);
  json config = {
    {"ociVersion", "1.0.2"},
    {"process", process(agent ? agent_init_args() : idle_init_args(),
                        {k_default_path, "HOME=/root"}, "/", p.limits.pids)},
    {"root", {{"path", p.rootfs}, {"readonly", false}}},
    {"hostname", "sandbox"},
    {"mounts", mounts},
    {"linux", std::move(linux)},
  };
  return config.dump(1);
}

outcome<std::vector<std::string>> exec_environment(const exec_request& r) {
  if (r.argv.empty() || r.argv[0].empty())
    return make_error(errc::invalid_argument, "exec needs a program; argv is empty");
  std::vector<std::string> env = {k_default_path, "HOME=/root"};
  for (const auto& [k, v] : r.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      return make_error(errc::invalid_argument,
                        "environment name '" + k + "' is invalid; use a name without '='");
    if (v.find('\0') != std::string::npos)
      return make_error(errc::invalid_argument,
                        "environment value of " + k + " contains a NUL byte; remove it");
    std::string entry = k + "=" + v;
    auto same = [&](const std::string& e) { return e.compare(0, k.size() + 1, k + "=") == 0; };
    std::erase_if(env, same);
    env.push_back(entry);
  }
  for (const auto& a : r.argv)
    if (a.find('\0') != std::string::npos)
      return make_error(errc::invalid_argument, "an argument contains a NUL byte; remove it");
  if (r.cwd.empty() || r.cwd[0] != '/')
    return make_error(errc::invalid_argument,
                      "working directory '" + r.cwd + "' must be an absolute path");
  if (r.cwd.find('\0') != std::string::npos)
    return make_error(errc::invalid_argument, "the working directory contains a NUL byte");
  return env;
}

outcome<std::string> make_process_json(const exec_request& r, std::uint32_t pids, bool guarded,
                                       const exec_user* user) {
  auto env = exec_environment(r);
  if (!env)
    return env.err();
  try {
    auto doc =
      process(guarded ? guarded_argv(r.argv, r.timeout) : r.argv, env.value(), r.cwd, pids);
    if (user != nullptr) {
      doc["user"] = {{"uid", user->uid}, {"gid", user->gid}};
      if (!user->groups.empty())
        doc["user"]["additionalGids"] = user->groups;
      // What setuid away from root leaves a process: nothing but the bounding set.
      if (user->uid != 0)
        for (const char* set : {"effective", "permitted", "inheritable", "ambient"})
          doc["capabilities"][set] = json::array();
    }
    return doc.dump();
  } catch (const json::exception&) {
    return make_error(errc::invalid_argument,
                      "argv, env or cwd is not valid UTF-8; OCI runtimes take only UTF-8");
  }
}

} // namespace sandboxd::runtime
