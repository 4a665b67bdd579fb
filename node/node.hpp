// node — one sandboxd node: the event log, PostgreSQL, the read-model migrations, the
// sandbox runtimes, the control plane and the projectors, started and stopped in order.
// The daemon is a main() around it; the RPC server (api/) is built on what it exposes.
//
// start(), in order (docs/node.md):
//   1. the data directory: created 0700 or checked (owned by this user), locked;
//      the development token and the tokens file;
//   2. the event log: file_log in DATA_DIR/log, or kafka_log on the configured topic;
//   3. PostgreSQL: the embedded server under DATA_DIR/postgres, or the configured one
//      (refused with a clear message when it cannot be reached);
//   4. the migrations of the read models;
//   5. the template layers (DATA_DIR/templates/layers) and the runtimes (one driver each,
//      under DATA_DIR/runtimes/<kind>, stacking sandboxes on those layers), the sandboxes
//      the last stop quiesced resumed (runtime_quiesce.hpp), and the template registry
//      (DATA_DIR/templates/registry: the template stream folded, interrupted builds failed);
//   6. the control plane: recovery, then the actors take commands;
//   7. the projectors of the three read models, running continuously.
// A step that fails stops what was started before it, and start() throws start_error.
//
// stop(), in order: stop taking commands (a command submitted from then on, and one still
// without a reply when the control plane stops, is answered `unavailable`) → the control
// plane (the journal's appends complete) → the template registry → the runtimes (running
// sandboxes quiesced: no process, no mount left) → the template layers → the projectors,
// after a final catch-up → the log →
// PostgreSQL → the data directory's lock.
//
// Every member function is safe to call from many threads; stop() and the destructor wait
// for calls in progress.
#pragma once

#include "actors/control_plane.hpp"
#include "events/event_log.hpp"
#include "node/node_config.hpp"
#include "node/node_probe.hpp"
#include "node/start_error.hpp"
#include "node/tokens.hpp"
#include "projections/projector.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace sandboxd::runtime {
class data_entry;
class layer_store;
} // namespace sandboxd::runtime

namespace sandboxd::templates {
class template_registry;
}

namespace sandboxd::node {

class data_directory;
class egress;
class embedded_postgres;
class metered_log;
class runtime_set;

struct node_status {
  bool running = false;
  std::string data_dir;
  std::string log;      // the log's describe()
  std::string postgres; // "embedded (DATA_DIR/postgres)" or the conninfo without its password
  std::vector<events::runtime_kind> runtimes;
  events::runtime_kind default_runtime = events::runtime_kind::runsc;
  std::vector<projections::partition_lag> lag; // every partition
  std::vector<projections::projector_status> projectors;
  actors::directory_stats directory;
};

class node {
public:
  explicit node(node_config config);
  ~node();
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  void start();
  void stop();
  bool running() const;

  // The control plane's commands, while the node runs. Every submit gets exactly one reply:
  // the control plane's, or `unavailable` when the node is not running or stops first.
  void submit(std::string sandbox_id, actors::command c, actors::reply_when when,
              actors::reply_fn done);
  actors::command_reply call(std::string sandbox_id, actors::command c,
                             actors::reply_when when = actors::reply_when::settled);
  actors::command_reply get(std::string sandbox_id, std::string tenant);

  // What later layers build on; valid while the node runs.
  actors::control_plane& plane();
  events::event_log& log();
  // libpq conninfo of the read models' database, and their schema (list, bill, audit).
  const std::string& conninfo() const { return conninfo_; }
  const std::string& schema() const { return config_.schema; }
  const node_config& config() const { return config_; }
  const std::string& data_dir() const { return config_.data_dir; } // absolute once started
  const std::vector<events::runtime_kind>& runtimes() const;
  events::runtime_kind default_runtime() const;
  // The (metered) driver of `kind`, nullptr when the node does not hold it; and its data
  // directory.
  runtime::driver* driver(events::runtime_kind kind);
  // The node's templates (templates/template_registry.hpp): the template stream's writer and
  // the layer store every OCI driver stacks sandboxes on.
  // Null on a node without an OCI runtime (hollow only: no files to make templates of).
  templates::template_registry* templates();
  // The sandbox networks' table, proxy and resolver; null without a link range.
  egress* network() { return egress_.get(); }
  std::string runtime_dir(events::runtime_kind kind) const;
  const token_table& tokens() const { return tokens_; }
  std::string dev_token_path() const; // empty when the node makes no development token
  const actors::recovery_report& recovery() const;

  // Committed offsets against the log's end, per partition.
  std::vector<projections::partition_lag> lag();
  // Blocks until every projector has applied the log up to its end as of the call; throws
  // std::runtime_error (with the projectors' last error) when that takes over `timeout`.
  void catch_up(std::chrono::milliseconds timeout = std::chrono::minutes(2));
  node_status status();

  node_probe& probe() { return *probe_; }
  std::shared_ptr<node_probe> shared_probe() const { return probe_; }

private:
  void teardown();
  void fail_pending(const std::string& why);
  node_figures figures();

  node_config config_;
  std::shared_ptr<node_probe> probe_;
  std::string conninfo_;
  token_table tokens_;

  mutable std::shared_mutex gate_; // exclusive: start/stop; shared: calls into the parts
  bool running_ = false;
  std::atomic<bool> accepting_{false};

  std::unique_ptr<data_directory> dir_;
  std::unique_ptr<events::event_log> raw_log_;
  std::unique_ptr<metered_log> log_;
  std::unique_ptr<runtime::data_entry> postgres_entry_; // the path postgres_ works through
  std::unique_ptr<embedded_postgres> postgres_;
  std::shared_ptr<runtime::layer_store> layers_;
  std::unique_ptr<templates::template_registry> templates_;
  std::unique_ptr<egress> egress_; // with a link range only
  std::unique_ptr<runtime_set> runtimes_;
  std::unique_ptr<actors::control_plane> plane_;
  std::vector<std::unique_ptr<projections::projector>> projectors_;

  std::mutex pending_mu_;
  std::uint64_t next_pending_ = 0;
  std::unordered_map<std::uint64_t, actors::reply_fn> pending_;

  std::mutex figures_mu_;
  struct figures_connection;
  std::unique_ptr<figures_connection> figures_conn_;
};

// Where stock template tarballs are cached: `configured` (node_config::template_cache), or
// $SANDBOXD_CACHE/templates, or ~/.cache/sandboxd/templates; "" for "none".
std::string template_cache_dir(const std::string& configured);

// `conninfo` with its password left out, for messages and logs.
std::string redact_conninfo(const std::string& conninfo);

} // namespace sandboxd::node
