#include "actors/control_plane.hpp"

#include "actors/actor_context.hpp"
#include "actors/pool_actor.hpp"
#include "actors/sandbox_directory.hpp"
#include "actors/state_snapshot.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace sandboxd::actors {

namespace {

// Names CAF's threads (workers, its clock) "sbd-caf", so per-thread figures tell them apart.
struct name_caf_threads final : caf::thread_hook {
  void init(caf::actor_system&) override {}
  void thread_started() override { ::pthread_setname_np(::pthread_self(), "sbd-caf"); }
  void thread_terminates() override {}
};

} // namespace

struct control_plane::impl {
  control_plane_options options;
  std::string snapshot_dir;
  recovery_report report;
  std::unique_ptr<journal> journal_;
  std::unique_ptr<worker_pool> pool;
  std::unique_ptr<worker_pool> exec_pool;
  std::unique_ptr<timer_queue> timers;
  std::unique_ptr<timer_queue> wakeups;
  std::unique_ptr<timer_queue> pool_wakeups; // on the system clock, by pool key
  actor_context ctx;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  directory_handle directory;

  std::mutex snapshot_mu; // one snapshot at a time
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::thread snapshotter;
  // Sandboxes a driver found broken (runtime::failure_listener) become runtime_failed
  // commands; `reporting` is cleared, under its lock, before the actors go.
  std::mutex report_mu;
  bool reporting = false;
  // The warm pools by key text; retired ones drain and stop on their own, kept to be stopped
  // with the rest.
  std::mutex pools_mu;
  std::map<std::string, pool_handle> pools;
  std::vector<pool_handle> retired_pools;

  void run_snapshotter();
  void report_failure(const std::string& id, const std::string& reason);
  std::optional<pool_handle> pool_of(const std::string& key);
  void start_pools(const std::vector<recovered_entry>& found);
};

std::optional<pool_handle> control_plane::impl::pool_of(const std::string& key) {
  std::lock_guard g(pools_mu);
  auto it = pools.find(key);
  if (it == pools.end())
    return std::nullopt;
  return it->second;
}

// The configured pools, with the running pool sandboxes recovery found of their keys; every
// other unclaimed pool sandbox (of a pool no longer configured, or not running) is deleted.
void control_plane::impl::start_pools(const std::vector<recovered_entry>& found) {
  std::map<std::string, std::vector<adopted_sandbox>> adopted;
  std::vector<std::string> orphans;
  std::map<std::string, const pool_settings*> wanted;
  for (const auto& s : options.pools)
    wanted[to_string(s.key)] = &s;
  for (const auto& e : found) {
    if (e.pool.empty() || e.status == sandbox_status::deleted)
      continue;
    if (e.status == sandbox_status::running && wanted.count(e.pool))
      adopted[e.pool].push_back({e.sandbox_id, e.template_id});
    else
      orphans.push_back(e.sandbox_id);
  }
  pool_services services{&ctx, directory, options.pool_spec, pool_wakeups.get()};
  std::lock_guard g(pools_mu);
  for (const auto& [key, s] : wanted)
    pools[key] = spawn_pool_actor(*system, services, *s, std::move(adopted[key]));
  for (const auto& id : orphans) {
    auto r = std::make_shared<request>();
    r->sandbox_id = id;
    r->cmd.tenant = std::string(events::k_pool_tenant);
    r->cmd.principal = "pool";
    r->cmd.correlation_id = "pool-recovery";
    r->cmd.body = cmd::remove{};
    r->when = reply_when::durable;
    r->done = [](command_reply) {};
    caf::anon_send(directory, cmd_atom::value, request_ptr{std::move(r)});
  }
}

void control_plane::impl::report_failure(const std::string& id, const std::string& reason) {
  std::lock_guard g(report_mu);
  if (!reporting)
    return;
  auto r = std::make_shared<request>();
  r->sandbox_id = id;
  r->cmd.principal = "system";
  r->cmd.body = cmd::runtime_failed{reason};
  r->when = reply_when::durable;
  r->done = [](command_reply) {};
  caf::anon_send(directory, cmd_atom::value, request_ptr{std::move(r)});
}

void control_plane::impl::run_snapshotter() {
  ::pthread_setname_np(::pthread_self(), "sbd-snapshots");
  // Background work: a snapshot replays and encodes a whole stretch of the log, up to a
  // second of CPU. At the lowest priority it takes what the commands leave and never holds
  // a CPU an actor or the log's threads are waiting for (it still progresses when they
  // are busy, only slower). Failing to lower it is harmless.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  std::uint64_t last = 0;
  std::unique_lock l(stop_mu);
  while (!stopping) {
    stop_cv.wait_for(l, std::chrono::milliseconds(500));
    if (stopping)
      return;
    const auto appended = journal_->records_appended();
    if (appended - last < options.snapshot_every_records)
      continue;
    last = appended;
    l.unlock();
    try {
      std::lock_guard g(snapshot_mu);
      take_snapshots(*options.log, snapshot_dir);
    } catch (const std::exception& e) {
      std::cerr << "sandboxd: background snapshot failed: " << e.what()
                << " (recovery replays more of the log until one succeeds)\n";
    }
    l.lock();
  }
}

namespace {

// Every driver of the options, once each.
std::vector<runtime::driver*> all_drivers(const control_plane_options& o) {
  std::vector<runtime::driver*> out;
  for (const auto& [kind, d] : o.drivers)
    if (std::find(out.begin(), out.end(), d) == out.end())
      out.push_back(d);
  if (o.driver && std::find(out.begin(), out.end(), o.driver) == out.end())
    out.push_back(o.driver);
  return out;
}

} // namespace

control_plane::control_plane(control_plane_options options) : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  m.options = std::move(options);
  if (!m.options.driver && !m.options.drivers.empty()) {
    auto it = m.options.drivers.find(m.options.default_runtime);
    if (it == m.options.drivers.end())
      throw std::invalid_argument("control_plane: the default runtime " +
                                  events::to_string(m.options.default_runtime) +
                                  " is not among its drivers");
    m.options.driver = it->second;
  }
  if (!m.options.log || !m.options.driver || m.options.data_dir.empty())
    throw std::invalid_argument("control_plane needs a log, a driver and a data directory");
  if (!m.options.clock)
    m.options.clock = [] {
      return std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
    };
  for (const auto& [kind, d] : m.options.drivers)
    if (m.options.driver_never_blocks && !d->never_blocks())
      throw std::invalid_argument("driver_never_blocks: the " + std::string(d->name()) +
                                  " driver's calls can block; leave the option off");
  if (m.options.driver_never_blocks && !m.options.driver->never_blocks())
    throw std::invalid_argument(
      "driver_never_blocks: the " + std::string(m.options.driver->name()) +
      " driver's calls can block (a real runtime, or the hollow driver with latency or sync) "
      "and must not run on the actors' threads; leave the option off");
  m.snapshot_dir = m.options.data_dir + "/snapshots";
  auto recovered = recover(*m.options.log, recovery_drivers{m.options.drivers, m.options.driver},
                           m.snapshot_dir, m.options.clock());
  m.report = std::move(recovered.report);

  m.journal_ = std::make_unique<journal>(*m.options.log);
  m.pool = std::make_unique<worker_pool>(m.options.runtime_threads, "sbd-runtime");
  m.exec_pool = std::make_unique<worker_pool>(m.options.exec_threads, "sbd-exec");
  if (m.options.scheduler_threads > 0)
    m.config.set("scheduler.max-threads", m.options.scheduler_threads);
  // An idle CAF worker polls its queue 10 times, sleeps 50 us once, then waits on its
  // condition variable (an enqueue from outside wakes it). CAF's default, 100 polls and
  // then 500 more with a 50 us sleep after each, kept idle workers switching in and out
  // of the CPU: on 2 cores that cost more than the actors' work (the control-plane bench
  // ran at a quarter of the commands per second, at 1.6 times the CPU per command).
  m.config.set("work-stealing.aggressive-poll-attempts", std::size_t{10});
  m.config.set("work-stealing.moderate-poll-attempts", std::size_t{1});
  m.config.add_thread_hook<name_caf_threads>();
  m.system = std::make_unique<caf::actor_system>(m.config);

  m.ctx.log = m.options.log;
  m.ctx.driver = m.options.driver;
  m.ctx.drivers = m.options.drivers;
  m.ctx.driver_never_blocks = m.options.driver_never_blocks;
  m.ctx.journal_ = m.journal_.get();
  m.ctx.pool = m.pool.get();
  m.ctx.exec_pool = m.exec_pool.get();
  m.ctx.clock = m.options.clock;
  m.ctx.passivate_after = m.options.passivate_after;
  m.ctx.sample_interval = m.options.storage_sample_interval;
  auto* mp = &m;
  m.timers = std::make_unique<timer_queue>(
    m.options.clock,
    [mp](const std::string& id, timer_kind kind, events::time_point deadline) {
      caf::anon_send(mp->directory, timer_atom::value, id, static_cast<std::uint8_t>(kind),
                     static_cast<std::int64_t>(deadline.time_since_epoch().count()));
    },
    m.options.timer_poll);
  m.ctx.timers = m.timers.get();
  m.wakeups = std::make_unique<timer_queue>(
    [] {
      return std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
    },
    [mp](const std::string& id, timer_kind kind, events::time_point) {
      if (kind == timer_kind::retry)
        caf::anon_send(mp->directory, retry_atom::value, id);
      else
        caf::anon_send(mp->directory, idle_atom::value, id);
    },
    std::chrono::milliseconds(1000));
  m.ctx.wakeups = m.wakeups.get();
  m.pool_wakeups = std::make_unique<timer_queue>(
    [] {
      return std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
    },
    [mp](const std::string& key, timer_kind, events::time_point) {
      if (auto p = mp->pool_of(key))
        caf::anon_send(*p, pool_tick_atom::value);
    },
    std::chrono::milliseconds(1000));
  m.ctx.template_use = m.options.template_use;
  if (m.ctx.template_use)
    for (const auto& e : recovered.sandboxes)
      if (!e.template_id.empty() && e.status != sandbox_status::absent &&
          e.status != sandbox_status::deleted)
        m.ctx.template_use(e.sandbox_id, e.template_id, true);
  for (const auto& s : m.options.pools)
    if (auto why = check(s))
      throw std::invalid_argument("control_plane: " + *why);
  std::vector<recovered_entry> pool_sandboxes;
  for (const auto& e : recovered.sandboxes)
    if (!e.pool.empty())
      pool_sandboxes.push_back({e.sandbox_id, e.status, {}, {}, {}, e.template_id, e.pool});
  auto seed = std::make_shared<directory_seed>();
  seed->sandboxes = std::move(recovered.sandboxes);
  m.directory = spawn_sandbox_directory(*m.system, &m.ctx, seed);
  m.start_pools(pool_sandboxes);
  if (m.options.snapshot_every_records > 0)
    m.snapshotter = std::thread([mp] { mp->run_snapshotter(); });
  {
    std::lock_guard g(m.report_mu);
    m.reporting = true;
  }
  for (auto* d : all_drivers(m.options))
    d->set_failure_listener(
      [mp](const std::string& id, const std::string& reason) { mp->report_failure(id, reason); });
}

control_plane::~control_plane() {
  auto& m = *impl_;
  for (auto* d : all_drivers(m.options))
    d->set_failure_listener({});
  {
    std::lock_guard g(m.report_mu);
    m.reporting = false;
  }
  {
    std::lock_guard l(m.stop_mu);
    m.stopping = true;
  }
  m.stop_cv.notify_all();
  if (m.snapshotter.joinable())
    m.snapshotter.join();
  // Actors first: they use the timer queues, the pool and the journal until they stop. The
  // pools first of all: they send to the directory.
  {
    std::lock_guard g(m.pools_mu);
    for (auto& [key, p] : m.pools)
      caf::anon_send(p, stop_atom::value);
    for (auto& p : m.retired_pools)
      caf::anon_send(p, stop_atom::value);
  }
  caf::anon_send(m.directory, stop_atom::value);
  m.system->await_all_actors_done();
  m.pool_wakeups.reset();
  {
    std::lock_guard g(m.pools_mu);
    m.pools.clear();
    m.retired_pools.clear();
  }
  m.timers.reset();
  m.wakeups.reset();
  m.exec_pool.reset();
  m.pool.reset();
  m.journal_->wait_idle();
  m.journal_.reset();
  m.directory = directory_handle{};
  m.system.reset();
}

namespace {

// Why the node cannot make the sandbox `spec` asks for, or nullopt: its runtime kind must be
// one the node holds, its network policy one the drivers enforce.
std::optional<events::error> unsupported(const actor_context& ctx,
                                         const std::set<events::runtime_kind>& networked,
                                         const events::created& spec) {
  if (!ctx.driver_for(spec.runtime)) {
    std::string held;
    for (const auto& [kind, d] : ctx.drivers)
      held += (held.empty() ? "" : ", ") + events::to_string(kind);
    return events::make_error(events::errc::invalid_argument,
                              "runtime " + events::to_string(spec.runtime) +
                                " is not on this node; use one of: " + held);
  }
  // A network only where the node enforces egress (control_plane_options::networked).
  if (spec.network.mode != events::network_mode::none && !networked.contains(spec.runtime))
    return events::make_error(events::errc::invalid_argument,
                              "network mode " + events::to_string(spec.network.mode) +
                                " cannot be enforced for runtime " +
                                events::to_string(spec.runtime) +
                                " on this node (it has no link range); create the sandbox "
                                "with network none");
  return std::nullopt;
}

} // namespace

void control_plane::send(std::shared_ptr<request> r) {
  caf::anon_send(impl_->directory, cmd_atom::value, request_ptr{std::move(r)});
}

void control_plane::submit(std::string sandbox_id, command c, reply_when when, reply_fn done) {
  if (auto* x = std::get_if<cmd::create>(&c.body))
    if (auto why = unsupported(impl_->ctx, impl_->options.networked, x->spec)) {
      command_reply r;
      r.failure = std::move(why);
      done(std::move(r));
      return;
    }
  auto r = std::make_shared<request>();
  r->sandbox_id = std::move(sandbox_id);
  r->cmd = std::move(c);
  r->when = when;
  r->done = std::move(done);
  caf::anon_send(impl_->directory, cmd_atom::value, request_ptr{std::move(r)});
}

command_reply control_plane::call(std::string sandbox_id, command c, reply_when when) {
  auto p = std::make_shared<std::promise<command_reply>>();
  auto f = p->get_future();
  submit(std::move(sandbox_id), std::move(c), when,
         [p](command_reply r) { p->set_value(std::move(r)); });
  return f.get();
}

command_reply control_plane::get(std::string sandbox_id, std::string tenant) {
  auto p = std::make_shared<std::promise<command_reply>>();
  auto f = p->get_future();
  query(std::move(sandbox_id), std::move(tenant),
        [p](command_reply c) { p->set_value(std::move(c)); });
  return f.get();
}

void control_plane::query(std::string sandbox_id, std::string tenant, reply_fn done) {
  auto r = std::make_shared<request>();
  r->sandbox_id = std::move(sandbox_id);
  r->cmd.tenant = std::move(tenant);
  r->query = true;
  r->done = std::move(done);
  caf::anon_send(impl_->directory, cmd_atom::value, request_ptr{std::move(r)});
}

std::optional<events::error> control_plane::set_pool(const pool_settings& s) {
  auto& m = *impl_;
  if (auto why = check(s))
    return events::make_error(events::errc::invalid_argument, *why);
  if (!m.ctx.driver_for(s.key.runtime))
    return events::make_error(events::errc::invalid_argument,
                              "pool " + to_string(s.key) + ": runtime " +
                                events::to_string(s.key.runtime) + " is not on this node");
  const auto key = to_string(s.key);
  std::lock_guard g(m.pools_mu);
  auto it = m.pools.find(key);
  if (it != m.pools.end()) {
    caf::anon_send(it->second, pool_set_atom::value,
                   settings_ptr{std::make_shared<pool_settings>(s), false});
    return std::nullopt;
  }
  pool_services services{&m.ctx, m.directory, m.options.pool_spec, m.pool_wakeups.get()};
  m.pools[key] = spawn_pool_actor(*m.system, services, s, {});
  return std::nullopt;
}

bool control_plane::remove_pool(const pool_key& key) {
  auto& m = *impl_;
  std::lock_guard g(m.pools_mu);
  auto it = m.pools.find(to_string(key));
  if (it == m.pools.end())
    return false;
  pool_settings none;
  none.key = key;
  caf::anon_send(it->second, pool_set_atom::value,
                 settings_ptr{std::make_shared<pool_settings>(none), true});
  m.retired_pools.push_back(it->second);
  m.pools.erase(it);
  return true;
}

void control_plane::take_from_pool(const pool_key& key, std::string content_id,
                                   std::function<void(std::optional<std::string>)> done) {
  auto p = impl_->pool_of(to_string(key));
  if (!p) {
    done(std::nullopt);
    return;
  }
  caf::anon_send(
    *p, pool_take_atom::value,
    take_ptr{std::make_shared<take_request>(take_request{std::move(content_id), std::move(done)})});
}

void control_plane::return_to_pool(const pool_key& key, std::string sandbox_id,
                                   std::string content_id, bool discard) {
  auto p = impl_->pool_of(to_string(key));
  if (p) {
    caf::anon_send(*p, pool_give_atom::value, std::move(sandbox_id), std::move(content_id),
                   discard);
    return;
  }
  // The pool is gone: its sandbox is not kept either (never claimed, so the pool tenant's).
  auto r = std::make_shared<request>();
  r->sandbox_id = std::move(sandbox_id);
  r->cmd.tenant = std::string(events::k_pool_tenant);
  r->cmd.principal = "pool";
  r->cmd.body = cmd::remove{};
  r->when = reply_when::durable;
  r->done = [](command_reply) {};
  send(std::move(r));
}

std::vector<pool_figures> control_plane::pools(std::chrono::milliseconds limit) {
  std::vector<pool_handle> all;
  {
    std::lock_guard g(impl_->pools_mu);
    for (const auto& [key, p] : impl_->pools)
      all.push_back(p);
  }
  struct gathered {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<pool_figures> figures;
  };
  auto got = std::make_shared<gathered>();
  for (const auto& p : all)
    caf::anon_send(
      p, pool_figures_atom::value,
      figures_ptr{std::make_shared<std::function<void(pool_figures)>>([got](pool_figures f) {
        std::lock_guard g(got->mu);
        got->figures.push_back(std::move(f));
        got->cv.notify_all();
      })});
  std::unique_lock l(got->mu);
  got->cv.wait_for(l, limit, [&] { return got->figures.size() == all.size(); });
  auto out = got->figures;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

bool control_plane::drain_pools(std::chrono::milliseconds limit) {
  {
    std::lock_guard g(impl_->pools_mu);
    for (auto& [key, p] : impl_->pools) {
      // Its settings with size and maximum 0, made from its own figures (on its thread).
      caf::anon_send(
        p, pool_figures_atom::value,
        figures_ptr{std::make_shared<std::function<void(pool_figures)>>([p = p](pool_figures f) {
          auto empty = f.settings;
          empty.size = 0;
          empty.maximum = 0;
          caf::anon_send(p, pool_set_atom::value,
                         settings_ptr{std::make_shared<pool_settings>(empty), false});
        })});
    }
  }
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto all = pools(std::chrono::milliseconds(500));
    const bool drained = std::all_of(all.begin(), all.end(), [](const pool_figures& f) {
      return f.settings.maximum == 0 && f.ready == 0 && f.making == 0 && f.deleting == 0;
    });
    if (drained)
      return true;
    if (std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

const recovery_report& control_plane::recovery() const {
  return impl_->report;
}

directory_stats control_plane::stats(std::chrono::milliseconds limit) {
  auto p = std::make_shared<std::promise<directory_stats>>();
  auto f = p->get_future();
  auto fn = std::make_shared<std::function<void(directory_stats)>>(
    [p](directory_stats s) { p->set_value(s); });
  caf::anon_send(impl_->directory, stats_atom::value, stats_ptr{std::move(fn)});
  if (f.wait_for(limit) != std::future_status::ready) {
    directory_stats none;
    none.answered = false;
    return none;
  }
  return f.get();
}

std::uint64_t control_plane::snapshot_now() {
  std::lock_guard g(impl_->snapshot_mu);
  return take_snapshots(*impl_->options.log, impl_->snapshot_dir);
}

} // namespace sandboxd::actors
