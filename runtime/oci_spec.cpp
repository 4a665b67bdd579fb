#include "runtime/oci_spec.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::runtime {
namespace {

using nlohmann::json;

const char* k_default_path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

json capabilities() {
  json caps = {"CAP_CHOWN",  "CAP_DAC_OVERRIDE",     "CAP_FSETID",     "CAP_FOWNER",
               "CAP_SETGID", "CAP_SETUID",           "CAP_SETFCAP",    "CAP_SETPCAP",
               "CAP_KILL",   "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_AUDIT_WRITE"};
  return {{"bounding", caps},
          {"effective", caps},
          {"permitted", caps},
          {"inheritable", json::array()},
          {"ambient", json::array()}};
}

json process(const std::vector<std::string>& args, const std::vector<std::string>& env,
             const std::string& cwd) {
  return {{"terminal", false},
          {"user", {{"uid", 0}, {"gid", 0}}},
          {"args", args},
          {"env", env},
          {"cwd", cwd},
          {"capabilities", capabilities()},
          {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
          {"noNewPrivileges", true}};
}

} // namespace

std::vector<std::string> idle_init_args() {
  return {"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 86400 & wait $!; done"};
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
    {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
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
  json config = {
    {"ociVersion", "1.0.2"},
    {"process", process(idle_init_args(), {k_default_path, "HOME=/root"}, "/")},
    {"root", {{"path", p.rootfs}, {"readonly", false}}},
    {"hostname", "sandbox"},
    {"mounts", mounts},
    {"linux",
     {{"resources", resources},
      {"cgroupsPath", p.cgroups_path},
      {"namespaces",
       {{{"type", "pid"}},
        {{"type", "network"}},
        {{"type", "ipc"}},
        {{"type", "uts"}},
        {{"type", "mount"}}}},
      {"maskedPaths",
       {"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
        "/proc/sched_debug", "/sys/firmware", "/proc/scsi"}},
      {"readonlyPaths",
       {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}},
  };
  return config.dump(1);
}

outcome<std::string> make_process_json(const exec_request& r) {
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
  try {
    return process(r.argv, env, r.cwd).dump();
  } catch (const json::exception&) {
    return make_error(errc::invalid_argument,
                      "argv, env or cwd is not valid UTF-8; OCI runtimes take only UTF-8");
  }
}

} // namespace sandboxd::runtime
