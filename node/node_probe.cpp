#include "node/node_probe.hpp"

#include "node/version.hpp"

#include <string>

namespace sandboxd::node {
namespace {

const prometheus::Histogram::BucketBoundaries& append_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                                         0.05,   0.1,   0.2,   0.5,   1,    5};
  return b;
}

const prometheus::Histogram::BucketBoundaries& driver_buckets() {
  static const prometheus::Histogram::BucketBoundaries b{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                         0.5,   1,     2.5,  5,     10,   60};
  return b;
}

const char* const k_states[] = {"creating", "running",  "pausing", "paused",
                                "resuming", "deleting", "deleted", "failed"};

} // namespace

std::string_view to_string(driver_call c) {
  static constexpr std::array<std::string_view, k_driver_calls> names{
    "create",    "start",       "exec",     "pause",       "resume",      "remove",
    "read_file", "write_file",  "list_dir", "stat",        "usage",       "inspect",
    "list",      "signal_exec", "make_dir", "remove_path", "rename_path", "set_env"};
  return names[static_cast<std::size_t>(c)];
}

node_probe::node_probe()
    : registry_(std::make_shared<prometheus::Registry>()),
      appends_(prometheus::BuildCounter()
                 .Name("sandboxd_log_appends_total")
                 .Help("Appends to the event log that completed, by outcome")
                 .Register(*registry_)),
      appends_ok_(appends_.Add({{"outcome", "ok"}})),
      appends_failed_(appends_.Add({{"outcome", "failed"}})),
      events_appended_(prometheus::BuildCounter()
                         .Name("sandboxd_events_appended_total")
                         .Help("Events made durable in the event log")
                         .Register(*registry_)
                         .Add({})),
      append_seconds_(prometheus::BuildHistogram()
                        .Name("sandboxd_log_append_seconds")
                        .Help("Event log append latency: issued to durable (or failed)")
                        .Register(*registry_)
                        .Add({}, append_buckets())),
      driver_seconds_(prometheus::BuildHistogram()
                        .Name("sandboxd_driver_call_seconds")
                        .Help("Sandbox runtime driver call latency, by runtime and call")
                        .Register(*registry_)),
      driver_failures_(prometheus::BuildCounter()
                         .Name("sandboxd_driver_call_failures_total")
                         .Help("Sandbox runtime driver calls that returned an error")
                         .Register(*registry_)),
      sandboxes_(prometheus::BuildGauge()
                   .Name("sandboxd_sandboxes")
                   .Help("Sandboxes by state (the sandboxes read model) and runtime")
                   .Register(*registry_)),
      lag_(prometheus::BuildGauge()
             .Name("sandboxd_projection_lag_records")
             .Help("Records of the event log not yet applied to the read models, by partition")
             .Register(*registry_)),
      end_offset_(prometheus::BuildGauge()
                    .Name("sandboxd_log_end_offset")
                    .Help("Records in the event log, by partition")
                    .Register(*registry_)),
      projection_failures_(prometheus::BuildCounter()
                             .Name("sandboxd_projection_step_failures_total")
                             .Help("Projector steps that failed and were retried")
                             .Register(*registry_)
                             .Add({})),
      actors_(prometheus::BuildGauge()
                .Name("sandboxd_actors")
                .Help("Sandboxes with a live actor (active) or passivated (dormant)")
                .Register(*registry_)),
      timers_(prometheus::BuildGauge()
                .Name("sandboxd_timers")
                .Help("Entries in the control plane's timer queue")
                .Register(*registry_)
                .Add({})),
      rpc_calls_(prometheus::BuildCounter()
                   .Name("sandboxd_rpc_calls_total")
                   .Help("RPC calls answered, by method and outcome (ok or the error code)")
                   .Register(*registry_)),
      rpc_seconds_(prometheus::BuildHistogram()
                     .Name("sandboxd_rpc_call_seconds")
                     .Help("RPC call latency, arrival to answer, by method")
                     .Register(*registry_)),
      pool_sandboxes_(prometheus::BuildGauge()
                        .Name("sandboxd_pool_sandboxes")
                        .Help("Sandboxes of each warm pool: ready, being made, and its target")
                        .Register(*registry_)),
      pool_claims_(prometheus::BuildCounter()
                     .Name("sandboxd_pool_claims_total")
                     .Help("Creates that asked a warm pool: served (hit) or not (miss)")
                     .Register(*registry_)),
      pool_creates_(prometheus::BuildCounter()
                      .Name("sandboxd_pool_creates_total")
                      .Help("A warm pool's own creates, by outcome (made running, or failed)")
                      .Register(*registry_)),
      pool_retired_(prometheus::BuildCounter()
                      .Name("sandboxd_pool_retired_total")
                      .Help("Ready pool sandboxes deleted unclaimed (demand fell, stale)")
                      .Register(*registry_)),
      pool_refill_(prometheus::BuildGauge()
                     .Name("sandboxd_pool_refill_seconds")
                     .Help("A warm pool's creates, started to running: mean and max")
                     .Register(*registry_)),
      egress_attempts_(prometheus::BuildCounter()
                         .Name("sandboxd_egress_attempts_total")
                         .Help("Sandbox connections (tcp) and DNS questions (dns) by verdict: "
                               "allowed, denied, refused (undecided, unlogged)")
                         .Register(*registry_)),
      egress_out_(prometheus::BuildCounter()
                    .Name("sandboxd_egress_bytes_total")
                    .Help("Bytes relayed by the egress proxy, by direction (out: sandbox to "
                          "destination)")
                    .Register(*registry_)
                    .Add({{"direction", "out"}})),
      egress_in_(prometheus::BuildCounter()
                   .Name("sandboxd_egress_bytes_total")
                   .Help("Bytes relayed by the egress proxy, by direction (out: sandbox to "
                         "destination)")
                   .Register(*registry_)
                   .Add({{"direction", "in"}})) {
  prometheus::BuildGauge()
    .Name("sandboxd_build_info")
    .Help("sandboxd's version")
    .Register(*registry_)
    .Add({{"version", std::string(version())}})
    .Set(1);
}

node_probe::driver_instruments& node_probe::driver(std::string_view runtime) {
  std::lock_guard l(drivers_mu_);
  auto it = drivers_.find(runtime);
  if (it != drivers_.end())
    return it->second;
  driver_instruments& d = drivers_[std::string(runtime)];
  for (std::size_t i = 0; i < k_driver_calls; ++i) {
    const prometheus::Labels labels{{"runtime", std::string(runtime)},
                                    {"call", std::string(to_string(static_cast<driver_call>(i)))}};
    d.seconds[i] = &driver_seconds_.Add(labels, driver_buckets());
    d.failures[i] = &driver_failures_.Add(labels);
  }
  return d;
}

void node_probe::rpc_call(std::string_view method, std::string_view outcome, double seconds) {
  // Family::Add returns the existing metric for labels it already has (thread-safe).
  rpc_calls_.Add({{"method", std::string(method)}, {"outcome", std::string(outcome)}}).Increment();
  rpc_seconds_.Add({{"method", std::string(method)}}, driver_buckets()).Observe(seconds);
}

void node_probe::egress_attempt(std::string_view protocol, std::string_view verdict) {
  egress_attempts_.Add({{"protocol", std::string(protocol)}, {"verdict", std::string(verdict)}})
    .Increment();
}

void node_probe::egress_bytes(std::uint64_t out, std::uint64_t in) {
  egress_out_.Increment(static_cast<double>(out));
  egress_in_.Increment(static_cast<double>(in));
}

void node_probe::log_appended(std::size_t records, std::chrono::nanoseconds latency, bool ok) {
  (ok ? appends_ok_ : appends_failed_).Increment();
  if (ok)
    events_appended_.Increment(static_cast<double>(records));
  append_seconds_.Observe(std::chrono::duration<double>(latency).count());
}

void node_probe::set_figures(std::function<node_figures()> figures) {
  std::lock_guard l(scrape_mu_);
  figures_ = std::move(figures);
}

void node_probe::refresh() const {
  std::lock_guard l(scrape_mu_);
  if (!figures_)
    return;
  const node_figures f = figures_();
  if (f.sandboxes_known) {
    for (const char* s : k_states) {
      auto it = f.sandboxes_by_state.find(s);
      sandboxes_.Add({{"state", s}, {"runtime", f.runtime}})
        .Set(it == f.sandboxes_by_state.end() ? 0.0 : static_cast<double>(it->second));
    }
  }
  for (const auto& p : f.lag) {
    const prometheus::Labels labels{{"partition", std::to_string(p.partition)}};
    lag_.Add(labels).Set(static_cast<double>(p.lag()));
    end_offset_.Add(labels).Set(static_cast<double>(p.end_offset));
  }
  if (f.projection_failures > failures_seen_) {
    projection_failures_.Increment(static_cast<double>(f.projection_failures - failures_seen_));
    failures_seen_ = f.projection_failures;
  }
  for (const auto& p : f.pools) {
    auto& seen = pools_seen_[p.key];
    const auto grow = [&](prometheus::Family<prometheus::Counter>& family,
                          prometheus::Labels labels, std::uint64_t now, std::uint64_t before) {
      auto& c = family.Add(labels);
      if (now > before)
        c.Increment(static_cast<double>(now - before));
    };
    pool_sandboxes_.Add({{"pool", p.key}, {"kind", "ready"}}).Set(p.ready);
    pool_sandboxes_.Add({{"pool", p.key}, {"kind", "making"}}).Set(p.making);
    pool_sandboxes_.Add({{"pool", p.key}, {"kind", "target"}}).Set(p.target);
    grow(pool_claims_, {{"pool", p.key}, {"outcome", "hit"}}, p.hits, seen.hits);
    grow(pool_claims_, {{"pool", p.key}, {"outcome", "miss"}}, p.misses, seen.misses);
    grow(pool_creates_, {{"pool", p.key}, {"outcome", "made"}}, p.made, seen.made);
    grow(pool_creates_, {{"pool", p.key}, {"outcome", "failed"}}, p.failed, seen.failed);
    grow(pool_retired_, {{"pool", p.key}}, p.retired, seen.retired);
    pool_refill_.Add({{"pool", p.key}, {"stat", "mean"}})
      .Set(p.made ? p.refill_seconds_sum / static_cast<double>(p.made) : 0.0);
    pool_refill_.Add({{"pool", p.key}, {"stat", "max"}}).Set(p.refill_seconds_max);
    seen = p;
  }
  if (f.actors_known) {
    actors_.Add({{"kind", "active"}}).Set(static_cast<double>(f.actors_active));
    actors_.Add({{"kind", "dormant"}}).Set(static_cast<double>(f.actors_dormant));
    timers_.Set(static_cast<double>(f.timers));
  }
}

std::vector<prometheus::MetricFamily> node_probe::Collect() const {
  refresh();
  return registry_->Collect();
}

} // namespace sandboxd::node
