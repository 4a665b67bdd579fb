#include "node/node.hpp"

#include "base/sha256.hpp"
#include "events/file_log.hpp"
#include "events/kafka_log.hpp"
#include "node/data_directory.hpp"
#include "node/egress.hpp"
#include "node/embedded_postgres.hpp"
#include "node/metered_log.hpp"
#include "node/pool_templates.hpp"
#include "node/runtime_quiesce.hpp"
#include "node/runtime_set.hpp"
#include "projections/migrations.hpp"
#include "runtime/data_entry.hpp"
#include "runtime/layer_store.hpp"
#include "templates/template_registry.hpp"

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <future>
#include <regex>
#include <thread>

namespace sandboxd::node {

using steady = std::chrono::steady_clock;

struct node::figures_connection {
  std::unique_ptr<pqxx::connection> conn;
};

namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string kinds_text(const std::vector<events::runtime_kind>& kinds) {
  std::vector<std::string> names;
  for (auto k : kinds)
    names.push_back(events::to_string(k));
  return join(names);
}

actors::command_reply unavailable(std::string why) {
  actors::command_reply r;
  r.failure = events::make_error(events::errc::unavailable, std::move(why));
  return r;
}

// A conninfo whose connection attempt gives up instead of hanging on an unreachable host.
std::string with_connect_timeout(const std::string& conninfo) {
  if (conninfo.find("://") != std::string::npos ||
      conninfo.find("connect_timeout") != std::string::npos)
    return conninfo;
  return conninfo + " connect_timeout=10";
}

// Recovery reads every partition first. A Kafka topic made a moment ago may not have a
// leader for each partition yet ("Not leader for partition"): wait until every partition
// answers, or fail with what the last attempt said.
void wait_until_readable(events::event_log& log, std::chrono::milliseconds timeout) {
  const auto until = steady::now() + timeout;
  for (std::int32_t p = 0; p < log.partitions();) {
    const auto end = log.end_offset(p);
    if (end.ok()) {
      ++p;
      continue;
    }
    if (steady::now() > until)
      throw start_error(log.describe() + " does not answer for partition " + std::to_string(p) +
                        ": " + end.failure->message);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

} // namespace

std::string template_cache_dir(const std::string& configured) {
  if (configured == "none")
    return "";
  if (!configured.empty())
    return configured;
  if (const char* c = std::getenv("SANDBOXD_CACHE"); c && *c)
    return std::string(c) + "/templates";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/sandboxd/templates";
}

std::string redact_conninfo(const std::string& conninfo) {
  static const std::regex key_value(R"((password\s*=\s*)('([^'\\]|\\.)*'|\S+))", std::regex::icase);
  static const std::regex uri(R"((://[^:/@]*:)[^@]*@)");
  std::string out = std::regex_replace(conninfo, key_value, "$1***");
  return std::regex_replace(out, uri, "$1***@");
}

node::node(node_config config)
    : config_(std::move(config)), probe_(std::make_shared<node_probe>()),
      figures_conn_(std::make_unique<figures_connection>()) {}

node::~node() {
  stop();
}

bool node::running() const {
  std::shared_lock l(gate_);
  return running_;
}

void node::start() {
  std::unique_lock l(gate_);
  if (running_)
    return;
  const auto t0 = steady::now();
  const char* part = "data directory";
  try {
    // 1. The data directory, the tokens.
    std::optional<gid_t> traverse_group;
    if (config_.postgres.empty() && ::geteuid() == 0)
      traverse_group = embedded_postgres::server_identity().second;
    dir_ = std::make_unique<data_directory>(config_.data_dir, traverse_group);
    config_.data_dir = dir_->path();
    part = "tokens";
    tokens_ = token_table{};
    if (!config_.tokens_file.empty()) {
      auto loaded = load_tokens(config_.tokens_file);
      if (!loaded.value)
        throw start_error(loaded.failure->message);
      tokens_ = std::move(*loaded.value);
    }
    if (config_.dev_token) {
      const auto dev = ensure_dev_token(dev_token_path());
      if (auto e = tokens_.add(token_sha256(dev.token), dev_token_identity()))
        throw start_error(e->message);
      spdlog::info("development token (tenant dev, scopes sandboxes and admin) {} {}",
                   dev.made ? "made in" : "in", dev_token_path());
    }

    // 2. The event log.
    part = "event log";
    if (config_.log == log_kind::file) {
      events::file_log_options o;
      o.dir = dir_->private_subdirectory("log");
      o.partitions = config_.partitions;
      raw_log_ = std::make_unique<events::file_log>(o);
    } else {
      if (config_.kafka.brokers.empty())
        throw start_error("the Kafka log needs brokers; give --kafka-brokers");
      events::kafka_log_options o;
      o.bootstrap_servers = config_.kafka.brokers;
      o.topic = config_.kafka.topic;
      o.partitions = config_.partitions;
      o.replication_factor = config_.kafka.replication_factor;
      o.min_insync_replicas = config_.kafka.min_insync_replicas;
      o.config = config_.kafka.config;
      raw_log_ = std::make_unique<events::kafka_log>(o);
    }
    wait_until_readable(*raw_log_, std::chrono::seconds(30));
    log_ = std::make_unique<metered_log>(*raw_log_, *probe_, config_.on_append);
    spdlog::info("event log: {} ({} partitions)", log_->describe(), log_->partitions());

    // 3. PostgreSQL.
    part = "PostgreSQL";
    if (config_.postgres.empty()) {
      embedded_postgres_options o;
      o.dir = *dir_ / "postgres";
      // The server's user must reach its directory by path; when a directory above the
      // data directory is closed to it (a data directory under /root or mktemp -d), the
      // server works through the data directory's entry under /run/sandboxd.
      if (::geteuid() == 0 && !runtime::ancestors_searchable(dir_->path())) {
        postgres_entry_ = std::make_unique<runtime::data_entry>(dir_->path(), "/run/sandboxd");
        o.dir = postgres_entry_->path() + "/postgres";
        spdlog::info("PostgreSQL: a directory above {} is closed to others; the embedded server "
                     "works through {}",
                     dir_->path(), postgres_entry_->path());
      }
      o.bin_dir = config_.postgres_bin_dir;
      postgres_ = std::make_unique<embedded_postgres>(o);
      conninfo_ = postgres_->conninfo();
    } else {
      conninfo_ = config_.postgres;
      try {
        pqxx::connection probe(with_connect_timeout(conninfo_));
      } catch (const std::exception& e) {
        throw start_error("PostgreSQL at \"" + redact_conninfo(conninfo_) +
                          "\" is unreachable: " + e.what() +
                          "; start it, fix --postgres, or leave --postgres out for the "
                          "embedded one");
      }
    }

    // 4. Migrations.
    part = "read-model migrations";
    {
      pqxx::connection c(conninfo_);
      const auto m = projections::apply_migrations(c, config_.schema);
      spdlog::info("read models: schema {} at migration {}{}", config_.schema, m.current_version,
                   m.applied.empty() ? ""
                                     : " (" + std::to_string(m.applied.size()) + " applied now)");
    }

    // 5. Runtimes.
    part = "runtimes";
    const runtime_choice choice = choose_runtimes(config_.runtimes, config_.default_runtime);
    for (const auto& w : choice.warnings)
      spdlog::warn("{}", w);
    // The template layers, for the runtimes that run processes (hollow has no files).
    const bool files = std::any_of(choice.kinds.begin(), choice.kinds.end(),
                                   [](auto k) { return k != events::runtime_kind::hollow; });
    if (files) {
      runtime::layer_store_options lo;
      lo.dir = *dir_ / "templates";
      layers_ = std::make_shared<runtime::layer_store>(lo);
    }
    if (!config_.network.link_range.empty()) {
      part = "network";
      egress_settings es;
      es.link_range = config_.network.link_range;
      // The table's and the links' names: this data directory's, so that two nodes on one
      // host (and their tests) never share them.
      es.link_instance = sha256_hex(config_.data_dir).substr(0, 8);
      es.upstream_dns = config_.network.upstream_dns;
      es.proxy_port = config_.network.proxy_port;
      es.dns_port = config_.network.dns_port;
      es.proxy_max_connections = config_.network.proxy_max_connections;
      es.proxy_max_per_sandbox = config_.network.proxy_max_per_sandbox;
      es.admit = config_.network.admit;
      es.probe = probe_.get();
      egress_ = std::make_unique<egress>(std::move(es));
      spdlog::info("network: links from {}, egress table inet {}, proxy port {}, resolver port {}",
                   config_.network.link_range, egress_->table(), egress_->proxy_port(),
                   egress_->dns_port());
      part = "runtimes";
    }
    runtimes_ = std::make_unique<runtime_set>(
      choice, *dir_ / "runtimes", *probe_, layers_, config_.network.link_range,
      config_.network.link_range.empty() ? "" : sha256_hex(config_.data_dir).substr(0, 8));
    if (egress_)
      for (auto kind : runtimes_->kinds()) {
        auto* d = static_cast<metered_driver*>(runtimes_->find(kind));
        d->set_link_listeners(
          [e = egress_.get()](const runtime::sandbox_info& i) { e->link_made(i); },
          [e = egress_.get()](const std::string& id) { e->link_removed(id); });
        // The links that outlived the last run (stopped or paused sandboxes).
        if (auto all = d->list())
          for (const auto& i : all.value())
            egress_->link_made(i);
      }
    const auto restored = restore_sandboxes(*runtimes_, *dir_ / "quiesced");
    if (!restored.restored.empty())
      spdlog::info("runtimes: {} sandboxes quiesced at the last stop run again: {}",
                   restored.restored.size(), join(restored.restored));
    for (const auto& f : restored.failed)
      spdlog::error("runtimes: a sandbox quiesced at the last stop does not run again: {}", f);
    spdlog::info("runtimes: {} (default {})", kinds_text(choice.kinds),
                 events::to_string(choice.default_kind));

    // The template registry: the template stream folded before any sandbox names a template.
    if (layers_) {
      part = "templates";
      templates::registry_options ro;
      ro.log = log_.get();
      ro.layers = layers_;
      ro.dir = *dir_ / "templates/registry";
      ro.stock.cache_dir = template_cache_dir(config_.template_cache);
      if (!ro.stock.cache_dir.empty())
        ro.stock.work_dir = ro.stock.cache_dir + "/partial";
      ro.clock = config_.plane.clock;
      // Spec builds run their RUN steps on runsc where the node holds it, else on crun.
      for (auto kind : {events::runtime_kind::runsc, events::runtime_kind::crun})
        if (auto* d = runtimes_->find(kind); d && !ro.build.driver) {
          ro.build.driver = d;
          ro.build.runtime = events::to_string(kind);
        }
      templates_ = std::make_unique<templates::template_registry>(std::move(ro));
      const auto ready = templates_->snapshot();
      spdlog::info("templates: {} known, layers in {}{}", ready.by_id.size(), layers_->path(),
                   layers_->on_btrfs() ? " (a btrfs pool)" : " (plain directories)");
    }

    // 6. The control plane.
    part = "control plane";
    actors::control_plane_options o = config_.plane;
    if (templates_)
      o.template_use = [t = templates_.get()](const std::string& sandbox, const std::string& id,
                                              bool in_use) { t->note_use(sandbox, id, in_use); };
    o.log = log_.get();
    o.driver = nullptr; // the default kind's, among all of the node's drivers
    o.drivers.clear();
    o.driver_never_blocks = true;
    for (auto kind : runtimes_->kinds()) {
      o.drivers[kind] = runtimes_->find(kind);
      o.driver_never_blocks = o.driver_never_blocks && o.drivers[kind]->never_blocks();
    }
    o.default_runtime = runtimes_->default_kind();
    o.data_dir = dir_->private_subdirectory("control");
    if (templates_)
      o.pool_spec = [t = templates_.get()](const actors::pool_key& k) {
        return pool_spec_of(*t, k);
      };
    o.networked.clear();
    if (egress_)
      for (auto kind : runtimes_->kinds())
        if (kind != events::runtime_kind::hollow)
          o.networked.insert(kind);
    plane_ = std::make_unique<actors::control_plane>(o);
    if (egress_)
      egress_->attach(plane_.get());
    const auto& rec = plane_->recovery();
    spdlog::info("control plane: recovered {} sandboxes in {:.2f} s ({} events replayed, {} "
                 "steps finished, {} failed, {} orphans removed)",
                 rec.sandboxes, rec.seconds, rec.events_replayed, rec.finished.size(),
                 rec.failed.size(), rec.orphans_removed.size());
    for (const auto& id : rec.disagreed)
      spdlog::warn("control plane: sandbox {} is not in the runtime as the log says; recorded "
                   "as failed",
                   id);

    // 7. Projectors.
    part = "projectors";
    const auto partitions = static_cast<std::size_t>(log_->partitions());
    const std::size_t count = std::clamp<std::size_t>(config_.projectors, 1, partitions);
    for (std::size_t k = 0; k < count; ++k) {
      projections::projector_options po;
      po.schema = config_.schema;
      if (count > 1)
        for (std::size_t p = k; p < partitions; p += count)
          po.partitions.push_back(static_cast<std::int32_t>(p));
      po.on_commit = config_.on_projection_commit;
      // A failing step is retried; say so at once and then at most every 2^k-th time in a
      // row, so a stuck projection is seen in the log without flooding it.
      po.on_failure = [k](const std::string& why, std::uint64_t in_a_row) {
        if ((in_a_row & (in_a_row - 1)) == 0)
          spdlog::warn("projector {}: step failed ({} in a row; retried): {}", k, in_a_row, why);
      };
      po.on_recovery = [k](std::uint64_t failed_before) {
        spdlog::info("projector {}: applying again after {} failed steps", k, failed_before);
      };
      projectors_.push_back(std::make_unique<projections::projector>(*log_, conninfo_, po));
    }
    for (auto& p : projectors_)
      p->start();
  } catch (const start_error& e) {
    teardown();
    throw start_error(std::string(part) + ": " + e.what());
  } catch (const std::exception& e) {
    teardown();
    throw start_error(std::string(part) + ": " + e.what());
  }
  running_ = true;
  accepting_ = true;
  probe_->set_figures([this] { return figures(); });
  spdlog::info("node started in {:.2f} s on {}",
               std::chrono::duration<double>(steady::now() - t0).count(), config_.data_dir);
}

void node::stop() {
  // Before the gate: a scrape in progress holds the probe and waits for the gate.
  probe_->set_figures({});
  std::unique_lock l(gate_);
  if (!running_)
    return;
  accepting_ = false;
  spdlog::info("node stopping: no more commands");
  teardown();
  running_ = false;
  spdlog::info("node stopped");
}

void node::teardown() {
  // An exec without a timeout never ends by itself: the control plane's stop would wait for
  // it forever. Killed, it ends like any killed exec (its outcome in the log says so).
  // Connections end (interrupted) while their sandboxes' actors can still log it.
  if (egress_)
    egress_->stop();
  if (runtimes_ && plane_) {
    runtimes_->end_execs(SIGKILL);
    spdlog::info("execs in flight killed");
  }
  if (plane_) {
    // Warm pools' sandboxes are nobody's: deleted rather than kept across the stop.
    if (!plane_->pools(std::chrono::seconds(2)).empty())
      spdlog::info(plane_->drain_pools(std::chrono::seconds(60))
                     ? "warm pools drained: their ready sandboxes are deleted"
                     : "warm pools not drained within 60 s: the next start deletes or adopts "
                       "what is left");
    plane_.reset();
    spdlog::info("control plane stopped (journal flushed)");
  }
  fail_pending("the node stopped before the command's reply; its outcome is in the log: "
               "ask again once sandboxd runs");
  if (runtimes_) {
    try {
      const auto q = quiesce_sandboxes(*runtimes_, *dir_ / "quiesced");
      if (!q.stopped.empty())
        spdlog::info("runtimes: {} running sandboxes stopped until the next start: {}",
                     q.stopped.size(), join(q.stopped));
      if (!q.kept.empty())
        spdlog::warn("runtimes: {} memory-paused sandboxes keep their state as it is (a crun "
                     "sandbox's frozen processes, a runsc sandbox's checkpoint and mount): {}",
                     q.kept.size(), join(q.kept));
      for (const auto& f : q.failed)
        spdlog::error("runtimes: could not stop a sandbox: {}", f);
    } catch (const std::exception& e) {
      spdlog::error("runtimes: quiescing the sandboxes failed: {}", e.what());
    }
    runtimes_.reset();
  }
  egress_.reset(); // after the drivers, which tell it of links
  templates_.reset();
  layers_.reset(); // after the drivers: a quiesced sandbox's stack is unmounted by now
  for (auto& p : projectors_)
    p->stop();
  for (auto& p : projectors_) {
    try {
      p->catch_up();
    } catch (const std::exception& e) {
      spdlog::warn("projector: the final catch-up failed ({}); the read models catch up at the "
                   "next start",
                   e.what());
    }
  }
  if (!projectors_.empty())
    spdlog::info("projectors stopped");
  projectors_.clear();
  {
    std::lock_guard f(figures_mu_);
    figures_conn_->conn.reset();
  }
  log_.reset();
  raw_log_.reset();
  postgres_.reset();
  postgres_entry_.reset();
  dir_.reset();
}

void node::fail_pending(const std::string& why) {
  std::unordered_map<std::uint64_t, actors::reply_fn> left;
  {
    std::lock_guard l(pending_mu_);
    left.swap(pending_);
  }
  for (auto& [id, done] : left)
    done(unavailable(why));
}

void node::submit(std::string sandbox_id, actors::command c, actors::reply_when when,
                  actors::reply_fn done) {
  std::shared_lock l(gate_);
  if (!accepting_ || !plane_) {
    l.unlock();
    done(unavailable("sandboxd is not running (starting or stopping); retry once it runs"));
    return;
  }
  std::uint64_t id;
  {
    std::lock_guard p(pending_mu_);
    id = next_pending_++;
    pending_.emplace(id, std::move(done));
  }
  plane_->submit(std::move(sandbox_id), std::move(c), when, [this, id](actors::command_reply r) {
    actors::reply_fn fn;
    {
      std::lock_guard p(pending_mu_);
      auto it = pending_.find(id);
      if (it == pending_.end())
        return;
      fn = std::move(it->second);
      pending_.erase(it);
    }
    fn(std::move(r));
  });
}

actors::command_reply node::call(std::string sandbox_id, actors::command c,
                                 actors::reply_when when) {
  auto promise = std::make_shared<std::promise<actors::command_reply>>();
  auto reply = promise->get_future();
  submit(std::move(sandbox_id), std::move(c), when,
         [promise](actors::command_reply r) { promise->set_value(std::move(r)); });
  return reply.get();
}

actors::command_reply node::get(std::string sandbox_id, std::string tenant) {
  std::shared_lock l(gate_);
  if (!accepting_ || !plane_)
    return unavailable("sandboxd is not running (starting or stopping); retry once it runs");
  return plane_->get(std::move(sandbox_id), std::move(tenant));
}

actors::control_plane& node::plane() {
  if (!plane_)
    throw std::logic_error("node::plane() while the node is not running");
  return *plane_;
}

events::event_log& node::log() {
  if (!log_)
    throw std::logic_error("node::log() while the node is not running");
  return *log_;
}

const std::vector<events::runtime_kind>& node::runtimes() const {
  static const std::vector<events::runtime_kind> none;
  return runtimes_ ? runtimes_->kinds() : none;
}

events::runtime_kind node::default_runtime() const {
  return runtimes_ ? runtimes_->default_kind() : events::runtime_kind::runsc;
}

templates::template_registry* node::templates() {
  return templates_.get();
}

runtime::driver* node::driver(events::runtime_kind kind) {
  return runtimes_ ? runtimes_->find(kind) : nullptr;
}

std::string node::runtime_dir(events::runtime_kind kind) const {
  return config_.data_dir + "/runtimes/" + events::to_string(kind);
}

std::string node::dev_token_path() const {
  return config_.dev_token ? config_.data_dir + "/dev-token" : "";
}

const actors::recovery_report& node::recovery() const {
  if (!plane_)
    throw std::logic_error("node::recovery() while the node is not running");
  return plane_->recovery();
}

std::vector<projections::partition_lag> node::lag() {
  std::shared_lock l(gate_);
  std::vector<projections::partition_lag> out;
  for (auto& p : projectors_)
    for (const auto& x : p->lag())
      out.push_back(x);
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.partition < b.partition; });
  return out;
}

void node::catch_up(std::chrono::milliseconds timeout) {
  std::shared_lock l(gate_);
  std::vector<std::int64_t> ends;
  for (std::int32_t p = 0; log_ && p < log_->partitions(); ++p)
    ends.push_back(log_->end_offset(p).offset);
  const auto until = steady::now() + timeout;
  for (;;) {
    bool behind = false;
    std::string last_error;
    for (auto& p : projectors_) {
      for (const auto& x : p->lag())
        behind = behind || x.next_offset < ends[static_cast<std::size_t>(x.partition)];
      if (const auto st = p->status(); !st.last_error.empty())
        last_error = st.last_error;
    }
    if (!behind)
      return;
    if (steady::now() > until)
      throw std::runtime_error("the read models did not catch up with the log within " +
                               std::to_string(timeout.count()) + " ms" +
                               (last_error.empty() ? "" : "; last projector error: " + last_error));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

node_status node::status() {
  std::shared_lock l(gate_);
  node_status s;
  s.running = running_;
  s.data_dir = config_.data_dir;
  if (log_)
    s.log = log_->describe();
  s.postgres =
    postgres_ ? "embedded (" + config_.data_dir + "/postgres)" : redact_conninfo(config_.postgres);
  if (runtimes_) {
    s.runtimes = runtimes_->kinds();
    s.default_runtime = runtimes_->default_kind();
  }
  for (auto& p : projectors_) {
    for (const auto& x : p->lag())
      s.lag.push_back(x);
    s.projectors.push_back(p->status());
  }
  std::sort(s.lag.begin(), s.lag.end(),
            [](const auto& a, const auto& b) { return a.partition < b.partition; });
  if (plane_)
    s.directory = plane_->stats();
  return s;
}

node_figures node::figures() {
  node_figures f;
  const node_status s = status();
  f.lag = s.lag;
  for (const auto& p : s.projectors)
    f.projection_failures += p.failures;
  f.actors_known = s.directory.answered;
  if (!s.directory.answered)
    spdlog::warn("metrics: the sandbox directory did not answer within 5 s; the actor and "
                 "timer figures are those of the last scrape");
  f.actors_active = s.directory.active;
  f.actors_dormant = s.directory.dormant;
  f.timers = s.directory.timers;
  f.runtime = events::to_string(s.default_runtime);
  {
    std::shared_lock g(gate_);
    if (plane_)
      f.pools = plane_->pools(std::chrono::seconds(2));
  }
  std::lock_guard l(figures_mu_);
  try {
    auto& c = figures_conn_->conn;
    if (!c || !c->is_open())
      c = std::make_unique<pqxx::connection>(conninfo_);
    pqxx::read_transaction tx(*c);
    tx.exec("SET LOCAL statement_timeout = 5000");
    for (const auto& row : tx.exec("SELECT state, count(*) FROM " + tx.quote_name(config_.schema) +
                                   ".sandboxes GROUP BY state"))
      f.sandboxes_by_state[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    f.sandboxes_known = true;
  } catch (const std::exception& e) {
    figures_conn_->conn.reset();
    spdlog::warn("metrics: the sandboxes read model cannot be read: {}", e.what());
  }
  return f;
}

} // namespace sandboxd::node
