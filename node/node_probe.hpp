// node_probe — the node's Prometheus metrics (prometheus-cpp): what the log, the drivers
// and the read models report, in one registry that an exposer serves.
//
// Moved as things happen (by metered_log and metered_driver):
//   sandboxd_log_appends_total{outcome}              appends completed, ok or failed
//   sandboxd_events_appended_total                   records made durable
//   sandboxd_log_append_seconds                      append issued -> completed
//   sandboxd_driver_call_seconds{runtime,call}       each driver call (create, start, exec, ...)
//   sandboxd_driver_call_failures_total{runtime,call}
//   sandboxd_rpc_calls_total{method,outcome}         RPC calls answered, by method ("Session.get")
//                                                    and outcome ("ok" or the error code)
//   sandboxd_rpc_call_seconds{method}                arrival to answer
//   sandboxd_egress_attempts_total{protocol,verdict} a sandbox's connections (tcp) and DNS
//                                                    questions (dns): allowed, denied (an
//                                                    event each), refused (undecided: no
//                                                    event; the sandbox not running, its
//                                                    tenant's log budget spent, a stop)
//   sandboxd_egress_bytes_total{direction}           relayed: out (sandbox to destination), in
// Read at each scrape (the node's figures function):
//   sandboxd_sandboxes{state,runtime}                the `sandboxes` read model, by state
//   sandboxd_projection_lag_records{partition}       log end offset - committed offset
//   sandboxd_log_end_offset{partition}
//   sandboxd_projection_step_failures_total          projector steps that failed and were retried
//   sandboxd_actors{kind="active"|"dormant"}, sandboxd_timers
//   sandboxd_pool_sandboxes{pool,kind="ready"|"making"|"target"}   each warm pool (docs/pools.md)
//   sandboxd_pool_claims_total{pool,outcome="hit"|"miss"}          takes that found a sandbox, or
//   none sandboxd_pool_creates_total{pool,outcome="made"|"failed"}      the pool's own creates
//   sandboxd_pool_retired_total{pool}                              ready sandboxes deleted
//   unclaimed sandboxd_pool_refill_seconds{pool,stat="mean"|"max"}           a pool create, start
//   to running sandboxd_build_info{version}                     1
//
// Thread-safe: the decorators call it from the log's and the pool's threads, a scrape
// from the exposer's. Later layers (the RPC server) add their own families to registry().
#pragma once

#include "actors/pool_table.hpp"
#include "projections/projector.hpp"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::node {

// The driver calls that are timed, in the order of driver.hpp.
enum class driver_call : std::uint8_t {
  create,
  start,
  exec,
  pause,
  resume,
  remove,
  read_file,
  write_file,
  list_dir,
  stat,
  usage,
  inspect,
  list,
  signal_exec,
  make_dir,
  remove_path,
  rename_path,
  set_env,
};
inline constexpr std::size_t k_driver_calls = 18;
std::string_view to_string(driver_call c);

// What a scrape reads from the node.
struct node_figures {
  bool sandboxes_known = false; // the read model answered; else sandboxd_sandboxes stays as it was
  std::string runtime;          // label of sandboxes_by_state
  std::map<std::string, std::int64_t> sandboxes_by_state;
  std::vector<projections::partition_lag> lag;
  std::uint64_t projection_failures = 0;
  bool actors_known = false; // the directory answered (else the actor gauges are kept)
  std::size_t actors_active = 0;
  std::size_t actors_dormant = 0;
  std::size_t timers = 0;
  std::vector<actors::pool_figures> pools; // every warm pool
};

class node_probe final : public prometheus::Collectable {
public:
  node_probe();

  // One driver's instruments, made once per runtime name.
  struct driver_instruments {
    std::array<prometheus::Histogram*, k_driver_calls> seconds{};
    std::array<prometheus::Counter*, k_driver_calls> failures{};
  };
  driver_instruments& driver(std::string_view runtime);

  void log_appended(std::size_t records, std::chrono::nanoseconds latency, bool ok);
  // One RPC call answered (api::server_options::on_call).
  void rpc_call(std::string_view method, std::string_view outcome, double seconds);
  // One attempt decided by the egress (node/egress.hpp), and a closed connection's bytes.
  void egress_attempt(std::string_view protocol, std::string_view verdict);
  void egress_bytes(std::uint64_t out, std::uint64_t in);

  // Called at each scrape for the figures above; empty: those gauges stay as they are.
  void set_figures(std::function<node_figures()> figures);

  std::vector<prometheus::MetricFamily> Collect() const override;
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

private:
  void refresh() const;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& appends_;
  prometheus::Counter& appends_ok_;
  prometheus::Counter& appends_failed_;
  prometheus::Counter& events_appended_;
  prometheus::Histogram& append_seconds_;
  prometheus::Family<prometheus::Histogram>& driver_seconds_;
  prometheus::Family<prometheus::Counter>& driver_failures_;
  prometheus::Family<prometheus::Gauge>& sandboxes_;
  prometheus::Family<prometheus::Gauge>& lag_;
  prometheus::Family<prometheus::Gauge>& end_offset_;
  prometheus::Counter& projection_failures_;
  prometheus::Family<prometheus::Gauge>& actors_;
  prometheus::Gauge& timers_;
  prometheus::Family<prometheus::Counter>& rpc_calls_;
  prometheus::Family<prometheus::Histogram>& rpc_seconds_;
  prometheus::Family<prometheus::Gauge>& pool_sandboxes_;
  prometheus::Family<prometheus::Counter>& pool_claims_;
  prometheus::Family<prometheus::Counter>& pool_creates_;
  prometheus::Family<prometheus::Counter>& pool_retired_;
  prometheus::Family<prometheus::Gauge>& pool_refill_;
  prometheus::Family<prometheus::Counter>& egress_attempts_;
  prometheus::Counter& egress_out_;
  prometheus::Counter& egress_in_;

  std::mutex drivers_mu_;
  std::map<std::string, driver_instruments, std::less<>> drivers_;

  mutable std::mutex scrape_mu_;
  std::function<node_figures()> figures_;
  mutable std::uint64_t failures_seen_ = 0;
  // A pool's counters as of the last scrape (the counters move by the difference).
  mutable std::map<std::string, actors::pool_figures> pools_seen_;
};

} // namespace sandboxd::node
