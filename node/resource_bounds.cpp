#include "node/resource_bounds.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>

namespace sandboxd::node {
namespace {

constexpr std::uint64_t k_cpu_oversubscription = 16;
constexpr std::uint64_t k_disk_oversubscription = 4;
constexpr std::uint64_t k_log_mib_per_hour = 256;
constexpr std::uint64_t k_templates_per_tenant = 100;
constexpr std::uint64_t k_snapshots_per_tenant = 100;

std::uint32_t clamp32(std::uint64_t v) {
  return static_cast<std::uint32_t>(
    std::min<std::uint64_t>(v, std::numeric_limits<std::uint32_t>::max()));
}

std::uint64_t mem_total_mib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kib;
      return kib / 1024;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

std::uint64_t pid_max() {
  std::ifstream in("/proc/sys/kernel/pid_max");
  std::uint64_t n = 0;
  in >> n;
  return n ? n : 32768;
}

std::uint64_t pool_mib(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) == 0)
    return std::uint64_t{v.f_blocks} * v.f_frsize >> 20;
  // Not made yet: what the pool will get (runtime/layer_pool.cpp, default_pool_bytes).
  auto parent = dir.substr(0, dir.rfind('/'));
  if (::statvfs(parent.c_str(), &v) != 0)
    return 0;
  return std::min<std::uint64_t>(64ull << 10, (std::uint64_t{v.f_bavail} * v.f_frsize >> 20) / 2);
}

} // namespace

node_capacity read_capacity(const std::vector<std::string>& layer_dirs,
                            const std::string& template_layers) {
  node_capacity c;
  c.memory_mib = mem_total_mib();
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  c.cpu_millicores = static_cast<std::uint64_t>(cores > 0 ? cores : 1) * 1000;
  c.pids = pid_max() * 3 / 4;
  for (const auto& d : layer_dirs)
    c.disk_mib += pool_mib(d);
  if (!template_layers.empty())
    c.template_mib = pool_mib(template_layers);
  return c;
}

events::sandbox_limits default_ceilings(const node_capacity& c) {
  events::sandbox_limits l;
  l.memory_mib = clamp32(c.memory_mib / 2);
  l.cpu_millicores = clamp32(c.cpu_millicores);
  l.pids = clamp32(c.pids / 8);
  l.disk_mib = clamp32(c.disk_mib / 2);
  return l;
}

quota_settings default_quota(const node_capacity& c) {
  quota_settings q;
  q.memory_mib = c.memory_mib / 2;
  q.cpu_millicores = c.cpu_millicores * k_cpu_oversubscription / 2;
  q.pids = c.pids / 2;
  q.disk_mib = c.disk_mib * k_disk_oversubscription / 2;
  q.log_mib_per_hour = c.memory_mib > 0 ? k_log_mib_per_hour : 0;
  q.snapshots = k_snapshots_per_tenant;
  if (c.template_mib != 0) { // a node with templates
    q.templates = k_templates_per_tenant;
    q.template_mib = c.template_mib / 2;
  }
  return q;
}

resolved_bounds resolve(const bound_settings& s, const node_capacity& c) {
  resolved_bounds r{default_quota(c), default_ceilings(c)};
  const auto set = [](auto& out, const std::optional<std::uint64_t>& v) {
    if (v)
      out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
  };
  set(r.quota.sandboxes, s.quota_sandboxes);
  set(r.quota.memory_mib, s.quota_memory_mib);
  set(r.quota.cpu_millicores, s.quota_cpu_millicores);
  set(r.quota.pids, s.quota_pids);
  set(r.quota.disk_mib, s.quota_disk_mib);
  set(r.quota.log_mib_per_hour, s.quota_log_mib_per_hour);
  set(r.quota.templates, s.quota_templates);
  set(r.quota.template_mib, s.quota_template_mib);
  set(r.quota.snapshots, s.quota_snapshots);
  set(r.ceilings.memory_mib, s.max_memory_mib);
  set(r.ceilings.cpu_millicores, s.max_cpu_millicores);
  set(r.ceilings.pids, s.max_pids);
  set(r.ceilings.disk_mib, s.max_disk_mib);
  return r;
}

std::optional<std::string> pool_over_ceilings(const std::string& pool,
                                              const events::sandbox_limits& limits,
                                              const events::sandbox_limits& ceilings) {
  const std::pair<const char*, std::pair<std::uint64_t, std::uint64_t>> each[] = {
    {"memory_mib", {limits.memory_mib, ceilings.memory_mib}},
    {"cpu_millicores", {limits.cpu_millicores, ceilings.cpu_millicores}},
    {"pids", {limits.pids, ceilings.pids}},
    {"disk_mib", {limits.disk_mib, ceilings.disk_mib}}};
  for (const auto& [field, v] : each)
    if (v.second != 0 && v.first > v.second)
      return "pool " + pool + ": " + field + " " + std::to_string(v.first) +
             " is over this node's ceiling of " + std::to_string(v.second) +
             ", so no create could be served from it; lower the pool's " + field +
             " or raise the ceiling ([limits])";
  return std::nullopt;
}

} // namespace sandboxd::node
