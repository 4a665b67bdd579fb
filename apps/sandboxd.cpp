// sandboxd — the daemon: flags and a config file in, one node (node/node.hpp) run until
// SIGTERM or SIGINT, then stopped in order. Flags, the config file, logs, signals and
// metrics are documented in docs/operations.md.
//
// Exit status: 0 after a clean stop (and for --help, --version, --print-config); 1 when the
// node cannot start (a dependency is unusable; the log says which and what to do); 2 for
// bad flags or a bad config file.
#include "api/server.hpp"
#include "api/token_authenticator.hpp"
#include "console/console_server.hpp"
#include "e2b/e2b_server.hpp"
#include "node/daemon_settings.hpp"
#include "node/logging.hpp"
#include "node/node.hpp"
#include "node/version.hpp"
#include "templates/template_registry.hpp"

#include <CLI/CLI.hpp>
#include <prometheus/exposer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

namespace sn = sandboxd::node;
namespace api = sandboxd::api;

int signal_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const char c = static_cast<char>(sig);
  [[maybe_unused]] auto n = ::write(signal_pipe[1], &c, 1);
  errno = saved;
}

// SIGTERM, SIGINT and SIGHUP are caught (not blocked: blocked signals would be inherited by
// every program the runtimes start) and written to a pipe the main thread reads.
void catch_signals() {
  if (::pipe2(signal_pipe, O_CLOEXEC) != 0) {
    std::perror("sandboxd: pipe");
    std::exit(1);
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGTERM, SIGINT, SIGHUP})
    ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

int wait_for_stop_signal() {
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(signal_pipe[0], &c, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n != 1)
      return SIGTERM;
    if (c == SIGHUP) {
      spdlog::info("SIGHUP ignored: sandboxd reloads nothing; restart it to apply changes");
      continue;
    }
    return c;
  }
}

// --test-clock-file: the time is whatever FILE says (nanoseconds since the Unix epoch, as
// decimal text), read at every call, so a test drives the node's clock from outside (the
// billing example runs 740 hours in a second). A read that fails or does not parse (the file
// being replaced) repeats the last time read. Test-only: hidden from --help.
std::optional<sandboxd::actors::clock_fn> file_clock(const std::string& path) {
  auto read = [path]() -> std::optional<std::int64_t> {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return std::nullopt;
    char buf[64];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    std::int64_t ns = 0;
    if (n <= 0)
      return std::nullopt;
    std::size_t len = static_cast<std::size_t>(n);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
      --len;
    auto [end, ec] = std::from_chars(buf, buf + len, ns);
    if (ec != std::errc() || end != buf + len)
      return std::nullopt;
    return ns;
  };
  auto first = read();
  if (!first)
    return std::nullopt;
  auto last = std::make_shared<std::atomic<std::int64_t>>(*first);
  return [read, last] {
    if (auto ns = read())
      last->store(*ns);
    return sandboxd::events::time_point{std::chrono::nanoseconds{last->load()}};
  };
}

} // namespace

int main(int argc, char** argv) {
  catch_signals();

  CLI::App app{"sandboxd — isolated sandboxes for AI agents, event-sourced (docs/operations.md)",
               "sandboxd"};
  app.set_version_flag("--version", "sandboxd " + std::string(sn::version()));
  sn::daemon_settings flags;
  std::string config_file;
  bool print_config = false, no_dev_token = false;
  app.add_option("--config", config_file, "TOML config file; flags win over it")
    ->check(CLI::ExistingFile);
  auto* data_dir = app.add_option("--data-dir", flags.data_dir, "data directory (default ./var)");
  auto* event_log =
    app.add_option("--event-log", flags.event_log, "event log: file (default) or kafka");
  auto* partitions =
    app.add_option("--partitions", flags.partitions, "partitions of a new log (default 8)");
  auto* brokers =
    app.add_option("--kafka-brokers", flags.kafka_brokers, "Kafka bootstrap servers HOST:PORT,...");
  auto* topic =
    app.add_option("--kafka-topic", flags.kafka_topic, "Kafka topic (default sandboxd-events)");
  auto* replication = app.add_option("--kafka-replication", flags.kafka_replication,
                                     "replication factor the Kafka topic needs (default 3; "
                                     "1 on a single broker)");
  auto* min_insync =
    app.add_option("--kafka-min-insync", flags.kafka_min_insync,
                   "copies of an event before an append is acknowledged (default 2; 1 on a "
                   "single broker)");
  auto* postgres = app.add_option("--postgres", flags.postgres,
                                  "libpq conninfo of an existing PostgreSQL (default: embedded)");
  auto* pg_bin = app.add_option("--postgres-bin-dir", flags.postgres_bin_dir,
                                "PostgreSQL 15 binaries for the embedded server");
  auto* runtimes = app
                     .add_option("--runtime", flags.runtimes,
                                 "runtimes to hold: runsc, crun, hollow (repeat or comma list; "
                                 "default runsc, or crun where runsc cannot run)")
                     ->delimiter(',');
  auto* default_runtime =
    app.add_option("--default-runtime", flags.default_runtime, "the default runtime");
  auto* listen = app.add_option("--listen", flags.listen,
                                "RPC address unix:PATH or tcp:HOST:PORT (repeatable; default "
                                "unix:DATA_DIR/sandboxd.sock)");
  auto* metrics = app.add_option("--metrics-addr", flags.metrics_addr,
                                 "Prometheus endpoint HOST:PORT (default: none)");
  auto* console_addr =
    app.add_option("--console-addr", flags.console_addr,
                   "web console HOST:PORT, or PORT for 127.0.0.1:PORT (default: none; TLS "
                   "with --tls-cert, required off loopback)");
  auto* e2b_addr = app.add_option("--e2b-addr", flags.e2b_addr,
                                  "E2B-compatible API HOST:PORT, or PORT for 127.0.0.1:PORT "
                                  "(default: none; TLS with --tls-cert, required off loopback; "
                                  "docs/e2b.md)");
  auto* log_format = app.add_option("--log-format", flags.log_format, "log lines: text or json");
  auto* log_level =
    app.add_option("--log-level", flags.log_level, "trace, debug, info (default), warn, error");
  auto* tokens = app.add_option("--tokens-file", flags.tokens_file, "tokens file (TOML)");
  app.add_flag("--no-dev-token", no_dev_token, "make and accept no development token");
  auto* projectors =
    app.add_option("--projectors", flags.projectors, "projectors of the read models (default 2)");
  auto* tls_cert = app.add_option("--tls-cert", flags.tls_certificate,
                                  "PEM certificate for RPC on non-loopback TCP addresses");
  auto* tls_key = app.add_option("--tls-key", flags.tls_key, "PEM private key of --tls-cert");
  // Bounds (unset: the node's fair share; 0: no limit), each a flag that wins over the file.
  struct bound_flag {
    const char* name;
    const char* help;
    std::optional<std::int64_t> sandboxd::node::daemon_settings::*field;
    std::int64_t value = 0;
    CLI::Option* option = nullptr;
  };
  using ds = sandboxd::node::daemon_settings;
  bound_flag bound_flags[] = {
    {"--quota-sandboxes", "live sandboxes per tenant (default: no limit)", &ds::quota_sandboxes},
    {"--quota-memory-mib", "memory MiB a tenant's live sandboxes may hold together",
     &ds::quota_memory_mib},
    {"--quota-cpu-millicores", "CPU millicores a tenant's live sandboxes may hold together",
     &ds::quota_cpu_millicores},
    {"--quota-pids", "pids a tenant's live sandboxes may hold together", &ds::quota_pids},
    {"--quota-disk-mib", "disk MiB a tenant's live sandboxes may hold together",
     &ds::quota_disk_mib},
    {"--quota-log-mib-per-hour", "MiB of event-log records a tenant may cause in any hour",
     &ds::quota_log_mib_per_hour},
    {"--quota-templates", "templates of its own a tenant may hold (building or ready)",
     &ds::quota_templates},
    {"--quota-template-mib", "MiB a tenant's own templates' layers may take in the store",
     &ds::quota_template_mib},
    {"--quota-snapshots", "snapshots a tenant may hold (default 100)", &ds::quota_snapshots},
    {"--max-memory-mib", "most memory MiB one sandbox may ask for", &ds::max_memory_mib},
    {"--max-cpu-millicores", "most CPU millicores one sandbox may ask for",
     &ds::max_cpu_millicores},
    {"--max-pids", "most pids one sandbox may ask for", &ds::max_pids},
    {"--max-disk-mib", "most disk MiB one sandbox may ask for", &ds::max_disk_mib},
  };
  for (auto& b : bound_flags)
    b.option = app.add_option(b.name, b.value,
                              std::string(b.help) +
                                " (default: the node's fair share, docs/security.md; 0: no limit)");
  auto* template_cache =
    app.add_option("--template-cache", flags.template_cache,
                   "where stock template tarballs are kept between data directories (default "
                   "$SANDBOXD_CACHE/templates or ~/.cache/sandboxd/templates; none: nowhere)");
  app.add_flag("--print-config", print_config,
               "print the effective settings as a config file and exit");
  std::string clock_file;
  app.add_option("--test-clock-file", clock_file, "test only: read the time from this file")
    ->group(""); // hidden: docs/operations.md, "A manual clock for tests"
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  // The file first, then every flag given on the command line.
  sn::daemon_settings settings;
  if (!config_file.empty())
    if (auto e = sn::load_config_file(settings, config_file)) {
      std::cerr << "sandboxd: " << e->message << "\n";
      return 2;
    }
  auto given = [](CLI::Option* o) { return o->count() > 0; };
  if (given(data_dir))
    settings.data_dir = flags.data_dir;
  if (given(event_log))
    settings.event_log = flags.event_log;
  if (given(partitions))
    settings.partitions = flags.partitions;
  if (given(brokers))
    settings.kafka_brokers = flags.kafka_brokers;
  if (given(topic))
    settings.kafka_topic = flags.kafka_topic;
  if (given(replication))
    settings.kafka_replication = flags.kafka_replication;
  if (given(min_insync))
    settings.kafka_min_insync = flags.kafka_min_insync;
  if (given(postgres))
    settings.postgres = flags.postgres;
  if (given(pg_bin))
    settings.postgres_bin_dir = flags.postgres_bin_dir;
  if (given(runtimes))
    settings.runtimes = flags.runtimes;
  if (given(default_runtime))
    settings.default_runtime = flags.default_runtime;
  if (given(listen))
    settings.listen = flags.listen;
  if (given(metrics))
    settings.metrics_addr = flags.metrics_addr;
  if (given(console_addr))
    settings.console_addr = flags.console_addr;
  if (given(e2b_addr))
    settings.e2b_addr = flags.e2b_addr;
  if (given(log_format))
    settings.log_format = flags.log_format;
  if (given(log_level))
    settings.log_level = flags.log_level;
  if (given(tokens))
    settings.tokens_file = flags.tokens_file;
  if (no_dev_token)
    settings.dev_token = false;
  if (given(projectors))
    settings.projectors = flags.projectors;
  if (given(tls_cert))
    settings.tls_certificate = flags.tls_certificate;
  if (given(tls_key))
    settings.tls_key = flags.tls_key;
  for (const auto& b : bound_flags)
    if (given(b.option))
      settings.*(b.field) = b.value;
  if (given(template_cache))
    settings.template_cache = flags.template_cache;

  auto checked = sn::to_daemon_config(settings);
  if (!checked.value) {
    std::cerr << "sandboxd: " << checked.failure->message << "\n";
    return 2;
  }
  if (print_config) {
    std::cout << sn::to_toml(settings);
    return 0;
  }
  sn::daemon_config config = std::move(*checked.value);
  if (!clock_file.empty()) {
    auto clock = file_clock(clock_file);
    if (!clock) {
      std::cerr << "sandboxd: --test-clock-file " << clock_file
                << ": cannot read a time from it; write nanoseconds since the epoch into it\n";
      return 2;
    }
    config.node.plane.clock = std::move(*clock);
  }
  sn::configure_logging(config.format, config.log_level);
  spdlog::info("sandboxd {} starting (pid {})", sn::version(), ::getpid());
  if (!clock_file.empty())
    spdlog::warn("the clock is the file {} (--test-clock-file, for tests only): events carry "
                 "the times it says",
                 clock_file);

  // The egress refuses a tenant's connections once its log budget is spent; the budget is
  // the RPC server's (its ledger), which starts after the node: until then, and once it is
  // gone, the egress admits.
  struct log_gate {
    std::mutex mu;
    const api::server* rpc = nullptr;
  };
  auto gate = std::make_shared<log_gate>();
  config.node.network.admit = [gate](const std::string& tenant) {
    std::lock_guard l(gate->mu);
    return gate->rpc == nullptr || gate->rpc->admits_log(tenant);
  };
  const auto close_gate = [gate] {
    std::lock_guard l(gate->mu);
    gate->rpc = nullptr;
  };
  sn::node node(std::move(config.node));
  try {
    node.start();
  } catch (const sn::start_error& e) {
    spdlog::error("sandboxd cannot start: {}", e.what());
    return 1;
  }

  std::unique_ptr<prometheus::Exposer> exposer;
  if (config.metrics) {
    const auto& m = *config.metrics;
    const std::string bind = (m.host.find(':') != std::string::npos ? "[" + m.host + "]" : m.host) +
                             ":" + std::to_string(m.port);
    try {
      exposer = std::make_unique<prometheus::Exposer>(bind);
      exposer->RegisterCollectable(node.shared_probe());
    } catch (const std::exception& e) {
      spdlog::error("sandboxd cannot start: metrics endpoint {}: {}; choose another "
                    "--metrics-addr",
                    bind, e.what());
      node.stop();
      return 1;
    }
    spdlog::info("metrics: http://{}/metrics", bind);
  }
  // The RPC server: started last, stopped first (it stops taking calls, then the node
  // finishes what is in flight).
  api::token_authenticator auth(node.tokens());
  std::unique_ptr<api::server> rpc;
  std::string addresses;
  // The E2B endpoint calls the RPC API like any client: on a unix or loopback listener, or on
  // a private socket of its own when every listener is a TLS one.
  std::string e2b_daemon_address;
  {
    api::server_options o;
    for (const auto& a : config.listen) {
      o.listen.push_back(a.to_string());
      addresses += (addresses.empty() ? "" : ", ") + a.to_string();
      if (e2b_daemon_address.empty() && a.loopback())
        e2b_daemon_address = a.to_string();
    }
    if (config.e2b && e2b_daemon_address.empty()) {
      e2b_daemon_address = "unix:" + node.data_dir() + "/e2b-rpc.sock";
      o.listen.push_back(e2b_daemon_address);
    }
    o.plane = &node.plane();
    o.log = &node.log();
    o.templates = node.templates();
    o.auth = &auth;
    o.pg_conninfo = node.conninfo();
    o.pg_schema = node.schema();
    o.defaults.runtime = node.default_runtime();
    o.defaults.runtimes = node.runtimes();
    if (node.network())
      for (auto k : node.runtimes())
        if (k != sandboxd::events::runtime_kind::hollow)
          o.defaults.networked.push_back(k);
    o.network_ceiling = config.network_ceiling;
    o.network_ceilings = config.network_ceilings;
    // Ceilings and quotas: the node's fair share of what this host has, unless set.
    std::vector<std::string> pools;
    for (auto k : node.runtimes())
      if (k != sandboxd::events::runtime_kind::hollow)
        pools.push_back(node.runtime_dir(k) + "/layers");
    // A node of hollow sandboxes only (control-plane benchmarks) holds nothing of the host's:
    // no default bounds there, only those set.
    const auto capacity = pools.empty()
                            ? sandboxd::node::node_capacity{}
                            : sandboxd::node::read_capacity(
                                pools, node.templates() ? node.templates()->layers().path() : "");
    const auto bounds = sandboxd::node::resolve(config.bounds, capacity);
    o.defaults.ceilings = bounds.ceilings;
    // The config file's pools (the node has them by now).
    for (const auto& p : node.plane().pools(std::chrono::seconds(2)))
      if (auto why =
            sandboxd::node::pool_over_ceilings(p.key, p.settings.key.limits, bounds.ceilings)) {
        spdlog::error("sandboxd cannot start: {}", *why);
        node.stop();
        return 1;
      }
    const auto& q = bounds.quota;
    o.quota = q;
    spdlog::info("limits: a sandbox may ask for at most {} MiB memory, {} millicores, {} pids, "
                 "{} MiB disk; a tenant's sandboxes may hold {} sandboxes, {} MiB memory, {} "
                 "millicores, {} pids, {} MiB disk, {} MiB of log records per hour (0: no limit)",
                 bounds.ceilings.memory_mib, bounds.ceilings.cpu_millicores, bounds.ceilings.pids,
                 bounds.ceilings.disk_mib, q.sandboxes, q.memory_mib, q.cpu_millicores, q.pids,
                 q.disk_mib, q.log_mib_per_hour);
    if (auto* t = node.templates()) {
      t->set_quota({q.templates, q.template_mib << 20});
      spdlog::info("limits: a tenant's own templates may number {} and take {} MiB (0: no limit)",
                   q.templates, q.template_mib);
    }
    if (q.disk_mib == 0 && !pools.empty())
      spdlog::warn("no tenant disk quota: every tenant's sandboxes share one layer pool, each "
                   "layer up to its disk limit, so one tenant can fill it for all; set "
                   "--quota-disk-mib (docs/security.md)");
    o.tls_certificate_file = config.tls_certificate;
    o.tls_key_file = config.tls_key;
    o.version = std::string(sn::version());
    o.on_call = [probe = node.shared_probe()](std::string_view method, std::string_view outcome,
                                              double seconds) {
      probe->rpc_call(method, outcome, seconds);
    };
    try {
      rpc = std::make_unique<api::server>(std::move(o));
      std::lock_guard l(gate->mu);
      gate->rpc = rpc.get();
    } catch (const std::exception& e) {
      spdlog::error("sandboxd cannot start: RPC server on {}: {}; check --listen", addresses,
                    e.what());
      exposer.reset();
      node.stop();
      return 1;
    }
  }
  spdlog::info("serving RPC on {}", addresses);
  // The web console: read-only pages over the read models and the log, after the RPC server
  // (same tokens), stopped before it.
  std::unique_ptr<sandboxd::console::console_server> console;
  if (config.console) {
    sandboxd::console::console_options o;
    o.host = config.console->host;
    o.port = config.console->port;
    o.node = &node;
    o.auth = &auth;
    o.tls_certificate_file = config.tls_certificate;
    o.tls_key_file = config.tls_key;
    try {
      console = std::make_unique<sandboxd::console::console_server>(std::move(o));
    } catch (const std::exception& e) {
      spdlog::error("sandboxd cannot start: web console on {}: {}", config.console->to_string(),
                    e.what());
      close_gate();
      rpc.reset();
      exposer.reset();
      node.stop();
      return 1;
    }
    spdlog::info("console: {}", console->url());
  }
  // The E2B-compatible endpoint (docs/e2b.md): E2B's SDKs over the RPC API, stopped before it.
  std::unique_ptr<sandboxd::e2b::e2b_server> e2b;
  if (config.e2b) {
    sandboxd::e2b::e2b_options o;
    o.host = config.e2b->host;
    o.port = config.e2b->port;
    o.daemon_address = e2b_daemon_address;
    o.tls_certificate_file = config.tls_certificate;
    o.tls_key_file = config.tls_key;
    o.token_key_file = node.data_dir() + "/e2b-token.key";
    o.endpoint_file = node.data_dir() + "/e2b-endpoint";
    try {
      e2b = std::make_unique<sandboxd::e2b::e2b_server>(std::move(o));
    } catch (const std::exception& e) {
      spdlog::error("sandboxd cannot start: E2B endpoint on {}: {}", config.e2b->to_string(),
                    e.what());
      console.reset();
      close_gate();
      rpc.reset();
      exposer.reset();
      node.stop();
      return 1;
    }
    spdlog::info("e2b: {}", e2b->url());
  }
  if (!node.dev_token_path().empty())
    spdlog::info("development token: {}", node.dev_token_path());
  spdlog::info("sandboxd ready");

  const int sig = wait_for_stop_signal();
  spdlog::info("signal {} received: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  // Stop in the reverse order: the E2B endpoint, the console, the RPC server, the metrics
  // endpoint, the node.
  e2b.reset();
  console.reset();
  close_gate();
  rpc.reset();
  exposer.reset();
  node.stop();
  spdlog::info("sandboxd stopped");
  return 0;
}
