// node_config — everything one node is made of, as plain values: where its data lives,
// which event log, which PostgreSQL, which sandbox runtimes, how many projectors.
//
// The daemon fills it from flags and its config file (daemon_settings.hpp); tests and
// benchmarks fill it directly. Nothing here is checked until node::start(), which refuses
// a config it cannot run with a start_error that names the setting.
#pragma once

#include "actors/control_plane.hpp"
#include "events/event.hpp"
#include "events/event_log.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::node {

enum class log_kind { file, kafka };

struct kafka_settings {
  std::string brokers; // "host:port,host:port"
  std::string topic = "sandboxd-events";
  // Copies of each event and how many must have it before an append is acknowledged: a
  // topic the node creates gets them, an existing topic with fewer is refused
  // (events/kafka_log.hpp). A single broker needs 1 and 1.
  std::int16_t replication_factor = 3;
  std::int32_t min_insync_replicas = 2;
  std::vector<std::pair<std::string, std::string>> config; // extra librdkafka properties
};

// Sandbox networks (docs/network.md). Without a link range no sandbox has a network: a
// create with a policy other than none is refused.
struct network_config {
  std::string link_range;       // "10.200.0.0/16": the links' addresses (a /30 per sandbox)
  std::string upstream_dns;     // the resolver sandboxd asks; "": /etc/resolv.conf's first
  std::uint16_t proxy_port = 0; // the egress proxy's and resolver's ports; 0: any free
  std::uint16_t dns_port = 0;
  // The proxy's connection threads, in all and per sandbox (network/egress_proxy.hpp).
  std::size_t proxy_max_connections = 4096;
  std::size_t proxy_max_per_sandbox = 512;
  // Whether a tenant may still log an event (its log budget); empty: always.
  std::function<bool(const std::string& tenant)> admit;
};

struct node_config {
  std::string data_dir = "./var"; // made absolute by start()

  log_kind log = log_kind::file;
  std::int32_t partitions = 8; // of a new log; an existing one keeps its own
  kafka_settings kafka;

  // libpq conninfo of an existing PostgreSQL; empty: the embedded one under
  // DATA_DIR/postgres, which the node initialises, starts and stops itself.
  std::string postgres;
  std::string postgres_bin_dir = "/usr/lib/postgresql/15/bin"; // for the embedded one
  std::string schema = "public";                               // of the read models

  // The runtimes the node holds. Empty: runsc and crun, those of them that can run here
  // (a warning names one that cannot). `hollow` runs no processes: for tests and benchmarks only.
  std::vector<events::runtime_kind> runtimes;
  // Among `runtimes`; empty: runsc when held, else the first.
  std::optional<events::runtime_kind> default_runtime;

  // Projectors of the read models: partition k belongs to projector k mod `projectors`.
  std::size_t projectors = 2;

  // Where stock templates' root filesystem tarballs are kept between data directories
  // (templates/stock_templates.hpp); empty: $SANDBOXD_CACHE (default ~/.cache/sandboxd)
  // /templates. "none" keeps none (every fresh data directory runs mmdebstrap again).
  std::string template_cache;

  network_config network;

  std::string tokens_file; // empty: none (only the development token)
  bool dev_token = true;   // DATA_DIR/dev-token, made on first start, admin scope

  // Tuning of the control plane. `log`, `driver` and `data_dir` are the node's and are
  // ignored here; driver_never_blocks is set from the default driver.
  actors::control_plane_options plane;

  // For benchmarks and tests: told of every append once it completed (the keys of the
  // batch, its outcome), before the appender is; and of every projector commit (the
  // partitions it moved and their committed next offsets). Both run on threads of the
  // log and the projectors: they must be quick.
  std::function<void(const std::vector<std::string>& keys, const events::append_result&)> on_append;
  std::function<void(const std::map<std::int32_t, std::int64_t>&)> on_projection_commit;
};

std::string to_string(log_kind k);

} // namespace sandboxd::node
