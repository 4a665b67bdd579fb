// resource_bounds — what one node can give its sandboxes, and from it the defaults of the
// per-sandbox ceilings and of every tenant's quota (docs/security.md "Resource bounds").
//
// Capacity is read from the host at start: memory (MemTotal), CPU (online cores), pids
// (three quarters of kernel.pid_max; the rest stays for the host's own processes) and disk
// (the sandbox layer pools' sizes). The defaults, each overridable by the config file or
// a flag (0 there: no limit):
// - a sandbox may ask for at most half the node's memory and disk, all its cores and an
//   eighth of its pids;
// - a tenant's live sandboxes may hold together half the node's memory and pids, and half
//   of an oversubscribed CPU and disk: a CPU limit caps time rather than reserving a core
//   (16 x the cores), and a layer's size caps what it may write rather than taking blocks
//   (4 x the pools); and 256 MiB of event-log records per hour, a rate no honest workload
//   nears (an exec is about 1 KiB of records) that keeps the log's disk from one tenant.
// So no single tenant can take the node from all the others. A tenant's own templates
// (docs/templates.md, "Quotas") may number 100 and take half the template layer pool. Pure but
// for read_capacity().
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::node {

struct node_capacity {
  std::uint64_t memory_mib = 0;
  std::uint64_t cpu_millicores = 0;
  std::uint64_t pids = 0;
  std::uint64_t disk_mib = 0;
  std::uint64_t template_mib = 0; // the template layer pool
};

// A tenant's quota: live sandboxes and what their limits add up to; 0 is no limit.
struct quota_settings {
  std::uint64_t sandboxes = 0;
  std::uint64_t memory_mib = 0;
  std::uint64_t cpu_millicores = 0;
  std::uint64_t pids = 0;
  std::uint64_t disk_mib = 0;
  // MiB of event-log records a tenant may cause in any hour (api/log_budget.hpp).
  std::uint64_t log_mib_per_hour = 0;
  std::uint64_t templates = 0;    // its own templates, building or ready
  std::uint64_t template_mib = 0; // what their layers take in the store
  std::uint64_t snapshots = 0;    // snapshots it holds (docs/snapshots.md)
};

// The host's capacity; `layer_dirs` are the mounted layer pools (a missing one counts
// half the free space of its filesystem, as a new pool would get), `template_layers` the
// template layer pool ("": none).
node_capacity read_capacity(const std::vector<std::string>& layer_dirs,
                            const std::string& template_layers = "");

events::sandbox_limits default_ceilings(const node_capacity& c);
quota_settings default_quota(const node_capacity& c);

// What the config file and flags set; unset: the default above; 0: no limit.
struct bound_settings {
  std::optional<std::uint64_t> quota_sandboxes, quota_memory_mib, quota_cpu_millicores, quota_pids,
    quota_disk_mib, quota_log_mib_per_hour;
  std::optional<std::uint64_t> max_memory_mib, max_cpu_millicores, max_pids, max_disk_mib;
  std::optional<std::uint64_t> quota_templates, quota_template_mib;
  std::optional<std::uint64_t> quota_snapshots;
};

struct resolved_bounds {
  quota_settings quota;
  events::sandbox_limits ceilings;
};
resolved_bounds resolve(const bound_settings& s, const node_capacity& c);

// Why warm pool `pool` (of sandboxes with `limits`) could never serve a create: a limit over
// its ceiling (a create asking for it is refused before any pool is asked), named with what
// to do; nullopt when every limit fits (a ceiling of 0 is none).
std::optional<std::string> pool_over_ceilings(const std::string& pool,
                                              const events::sandbox_limits& limits,
                                              const events::sandbox_limits& ceilings);

} // namespace sandboxd::node
