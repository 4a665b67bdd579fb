// daemon_settings — what the sandboxd daemon is told to run: the config file (TOML) and the
// flags, as one set of settings, then checked and turned into a node_config.
//
// The config file's schema is in docs/operations.md. Reading it is strict: an unknown
// table or key, or a value of the wrong type, is an invalid_argument that names the key,
// so a typo never silently leaves a default in place. Flags are applied after the file
// (apps/sandboxd.cpp), so a flag wins over the file.
#pragma once

#include "events/errc.hpp"
#include "network/policy.hpp"
#include "node/listen_address.hpp"
#include "node/node_config.hpp"
#include "node/resource_bounds.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::node {

// One [[pools]] entry: a warm pool (docs/pools.md). Limits default to a create's defaults, so
// a create that names only the template and runtime is served from it.
struct pool_entry {
  std::string template_name = "base";
  std::string runtime; // required: runsc, crun or hollow
  std::int64_t memory_mib = 512;
  std::int64_t cpu_millicores = 1000;
  std::int64_t pids = 512;
  std::int64_t disk_mib = 10240;
  std::int64_t size = 0;
  std::optional<std::int64_t> maximum; // unset: size
  double refill_per_second = 20;
  bool operator==(const pool_entry&) const = default;
};

struct daemon_settings {
  std::string data_dir = "./var";
  std::vector<std::string> listen; // empty: unix:DATA_DIR/sandboxd.sock
  std::string metrics_addr;        // empty: no metrics endpoint
  std::string console_addr;        // empty: no web console; "PORT" alone: 127.0.0.1:PORT
  std::string e2b_addr;            // empty: no E2B endpoint; "PORT" alone: 127.0.0.1:PORT
  std::string log_format = "text"; // text | json
  std::string log_level = "info";  // trace | debug | info | warn | error
  std::string event_log = "file";  // file | kafka
  std::int64_t partitions = 8;
  std::string kafka_brokers;
  std::string kafka_topic = "sandboxd-events";
  std::int64_t kafka_replication = 3;
  std::int64_t kafka_min_insync = 2;
  std::vector<std::pair<std::string, std::string>> kafka_properties;
  std::string postgres; // conninfo; empty: embedded
  std::string postgres_bin_dir = "/usr/lib/postgresql/15/bin";
  std::vector<std::string> runtimes; // empty: runsc, or crun where runsc cannot run
  std::string default_runtime;       // empty: runsc when held, else the first
  std::string tokens_file;
  bool dev_token = true;
  std::int64_t projectors = 2;
  // TLS for RPC on TCP addresses that are not loopback (PEM files).
  std::string tls_certificate;
  std::string tls_key;
  // Every tenant's quota and each sandbox's ceilings ([quotas], [limits]); unset: the
  // node's fair share (node/resource_bounds.hpp); 0: no limit.
  std::optional<std::int64_t> quota_sandboxes, quota_memory_mib, quota_cpu_millicores, quota_pids,
    quota_disk_mib, quota_log_mib_per_hour;
  std::optional<std::int64_t> max_memory_mib, max_cpu_millicores, max_pids, max_disk_mib;
  std::optional<std::int64_t> quota_templates, quota_template_mib; // a tenant's own templates
  std::optional<std::int64_t> quota_snapshots;                     // docs/snapshots.md
  // Where stock template tarballs are cached (node_config::template_cache); "" the default,
  // "none" keeps none.
  std::string template_cache;
  std::vector<pool_entry> pools; // [[pools]]
  // Sandbox networks ([network], docs/network.md): the links' block ("" : no sandbox has a
  // network), the resolver sandboxd asks, every tenant's ceiling (none | allowlist | all),
  // the rules allow lists must stay within (empty: any), and ceilings per tenant.
  std::string network_link_range;
  std::string network_upstream_dns;
  std::string network_ceiling = "all";
  std::vector<std::string> network_within;
  std::vector<std::pair<std::string, std::string>> network_tenant_ceilings;
};

// Reads a config file's text into `s` (keys it does not set keep their values). `source`
// names the file in messages.
std::optional<events::error> apply_config(daemon_settings& s, std::string_view toml_text,
                                          const std::string& source);
// Reads the file at `path` (not_found when it cannot be read).
std::optional<events::error> load_config_file(daemon_settings& s, const std::string& path);

// The settings as a config file that reads back to the same settings.
std::string to_toml(const daemon_settings& s);

enum class log_format { text, json };

struct daemon_config {
  node_config node;
  std::vector<listen_address> listen; // the RPC server's addresses; at least one
  std::string tls_certificate;        // absolute, or empty
  std::string tls_key;
  bound_settings bounds;                 // resolved against the host at start (resource_bounds.hpp)
  std::optional<listen_address> metrics; // tcp
  std::optional<listen_address> console; // tcp; TLS (tls_certificate) unless loopback
  std::optional<listen_address> e2b;     // tcp; TLS (tls_certificate) unless loopback
  log_format format = log_format::text;
  std::string log_level;
  network::ceiling network_ceiling;                         // every tenant's, unless below
  std::map<std::string, network::ceiling> network_ceilings; // per tenant
};

struct daemon_config_result {
  std::optional<daemon_config> value;
  std::optional<events::error> failure; // invalid_argument naming the setting
};

// Checks every setting; relative paths are taken from the working directory.
daemon_config_result to_daemon_config(const daemon_settings& s);

} // namespace sandboxd::node
