// control_plane_bench — the actor system end to end (hollow driver, embedded file log with
// fsync on, this machine's cores):
//   commands_per_s          create, pause, resume, delete cycles, each command replied once
//                           its step settled, 512 cycles in flight (closed loop);
//   command_p99_ms          the same cycles offered open loop at half that rate;
//   bytes_per_idle_sandbox  RSS growth per paused, passivated sandbox at --sandboxes;
//   recovery_s              open the log and the hollow driver (its state journal) and
//                           construct the control plane (snapshots + tail replay +
//                           reconciliation + listing the runtime) for those sandboxes and
//                           their ~10 events each.
// References measured in the same run: the hollow driver's own create-start-pause-usage-
// resume-remove cycle rate on the same threads, and recovery by full replay without
// snapshots. The file log lives on the disk under /tmp (real fdatasync); the hollow
// driver's data directory lives on /dev/shm, its journal not synced (it stands in for a
// runtime, whose own durability is not what this measures).
// Also printed: CPU time (user + system, the whole process) per command in the throughput
// run, a figure the load of other processes on the machine hardly moves, and per thread
// (by name; sandboxd's threads are named sbd-*, the log's and CAF's as they are) over the
// same run: CPU time, time spent runnable but waiting for a CPU, and context switches
// (voluntary: it slept; involuntary: it was preempted), from /proc/self/task.
// Usage: control_plane_bench [--json] [--sandboxes N] [--seconds S] [--log-on-shm]
//                            [--in-flight N] [--pool-steps] [--scheduler-threads N]
//   --in-flight N cycles in flight in the throughput run (default 512).
//   --pool-steps  run the hollow driver's steps on the blocking pool as for a real driver
//                 (by default they run on the actors' threads: driver_never_blocks).
//   --scheduler-threads N  CAF's worker threads (default: CAF's, at least 4).
//   --log-on-shm  the file log on /dev/shm too (fdatasync costs nothing): what the control
//                 plane does without the disk, for diagnosis; not the target figure.
#include "actors/control_plane.hpp"
#include "actors/state_snapshot.hpp"
#include "events/file_log.hpp"
#include "runtime/hollow_driver.hpp"
#include "tests/support/temp_dir.hpp"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ac = sandboxd::actors;
namespace ev = sandboxd::events;
namespace rt = sandboxd::runtime;
namespace cmd = sandboxd::actors::cmd;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

double seconds_since(steady::time_point t) {
  return std::chrono::duration<double>(steady::now() - t).count();
}

double cpu_seconds() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// One thread's counters from /proc/self/task/<tid>: schedstat (ns on a CPU, ns runnable
// but waiting for one, time slices) and status (context switches).
struct thread_times {
  std::string name;
  double run_ms = 0, wait_ms = 0;
  std::uint64_t voluntary = 0, involuntary = 0;
};

std::map<int, thread_times> read_thread_times() {
  std::map<int, thread_times> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const auto dir = e.path();
    thread_times t;
    std::ifstream comm(dir / "comm");
    std::getline(comm, t.name);
    std::ifstream sched(dir / "schedstat");
    double run_ns = 0, wait_ns = 0;
    sched >> run_ns >> wait_ns;
    t.run_ms = run_ns / 1e6;
    t.wait_ms = wait_ns / 1e6;
    std::ifstream status(dir / "status");
    for (std::string line; std::getline(status, line);) {
      std::istringstream in(line);
      std::string key;
      in >> key;
      if (key == "voluntary_ctxt_switches:")
        in >> t.voluntary;
      else if (key == "nonvoluntary_ctxt_switches:")
        in >> t.involuntary;
    }
    out[std::stoi(dir.filename().string())] = t;
  }
  return out;
}

// Prints what each thread living through [before, after] did meanwhile, per command.
void print_thread_times(const std::map<int, thread_times>& before,
                        const std::map<int, thread_times>& after, double commands) {
  std::printf("threads over the throughput run (per command: CPU us, waiting-for-CPU us, "
              "voluntary + involuntary switches):\n");
  double run = 0, wait = 0, vol = 0, invol = 0;
  for (const auto& [tid, a] : after) {
    auto b = before.find(tid);
    if (b == before.end())
      continue;
    const double r = (a.run_ms - b->second.run_ms) * 1e3 / commands;
    const double w = (a.wait_ms - b->second.wait_ms) * 1e3 / commands;
    const double v = static_cast<double>(a.voluntary - b->second.voluntary) / commands;
    const double n = static_cast<double>(a.involuntary - b->second.involuntary) / commands;
    run += r;
    wait += w;
    vol += v;
    invol += n;
    if (r < 0.05 && v < 0.005)
      continue; // idle meanwhile
    std::printf("  %-16s %6d  cpu %6.2f  wait %6.2f  switches %.3f + %.3f\n", a.name.c_str(), tid,
                r, w, v, n);
  }
  std::printf("  %-16s %6s  cpu %6.2f  wait %6.2f  switches %.3f + %.3f\n", "all", "", run, wait,
              vol, invol);
}

bool log_on_shm = false;
bool pool_steps = false;
std::size_t scheduler_threads = 0;
int cycles_in_flight = 512;

std::size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

ac::command user(ac::command_body body) {
  ac::command c;
  c.tenant = "bench";
  c.principal = "bench";
  c.body = std::move(body);
  return c;
}

ac::command create_command() {
  ev::created s;
  s.template_name = "base";
  s.limits.memory_mib = 256;
  s.limits.cpu_millicores = 500;
  s.runtime = ev::runtime_kind::hollow;
  return user(cmd::create{s});
}

// One node: a log, a hollow driver and a control plane on fresh directories.
struct node {
  sandboxd::test::temp_dir disk{"bench-cp"};
  std::string shm;
  std::unique_ptr<ev::file_log> log;
  std::unique_ptr<rt::hollow_driver> driver;
  ac::control_plane_options options;
  std::unique_ptr<ac::control_plane> plane;

  node() {
    char tmpl[] = "/dev/shm/sandboxd-bench-XXXXXX";
    if (!::mkdtemp(tmpl))
      throw std::runtime_error("cannot create a directory under /dev/shm");
    shm = tmpl;
    open_driver();
    options.data_dir = disk / "data";
    options.runtime_threads = 4;
    options.driver_never_blocks = !pool_steps;
    options.scheduler_threads = scheduler_threads;
    options.passivate_after = 200ms;
    options.storage_sample_interval = std::chrono::hours(1);
    options.snapshot_every_records = 200000;
  }
  ~node() {
    plane.reset();
    log.reset();
    std::filesystem::remove_all(shm);
  }
  void open_driver() {
    driver = std::make_unique<rt::hollow_driver>(rt::hollow_options{shm, {}});
    options.driver = driver.get();
  }
  void open_log() {
    log = std::make_unique<ev::file_log>(
      ev::file_log_options{log_on_shm ? shm + "/log" : disk / "log", 8});
  }
  void start() {
    if (!log)
      open_log();
    options.log = log.get();
    plane = std::make_unique<ac::control_plane>(options);
  }
};

// Runs create-pause-resume-delete cycles. `start_cycle` is called to begin each cycle and
// `done` after each command with its latency; returns when `stop` is set and every cycle
// has ended.
struct cycle_runner {
  ac::control_plane& plane;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> commands{0};
  std::atomic<std::uint64_t> failures{0};
  std::atomic<int> in_flight{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
  bool record = false;
  bool repeat = true; // a finished cycle starts the next one (closed loop)

  void step(std::string id, int n) {
    static const ac::command_body bodies[] = {cmd::pause{}, cmd::resume{}, cmd::remove{}};
    auto c = n == 0 ? create_command() : user(bodies[n - 1]);
    const auto began = steady::now();
    plane.submit(id, std::move(c), ac::reply_when::settled, [this, n, began](ac::command_reply r) {
      const double ms = std::chrono::duration<double, std::milli>(steady::now() - began).count();
      ++commands;
      if (record) {
        std::lock_guard l(mu);
        latencies_ms.push_back(ms);
      }
      if (!r.ok()) {
        ++failures;
        finish_cycle();
        return;
      }
      if (n < 3) {
        step(r.state.sandbox_id, n + 1);
        return;
      }
      finish_cycle();
    });
  }
  void start_cycle() {
    ++in_flight;
    step("", 0);
  }
  void finish_cycle() {
    if (repeat && !stop) {
      step("", 0);
      return;
    }
    --in_flight;
  }
  void drain() {
    stop = true;
    while (in_flight.load() > 0)
      std::this_thread::sleep_for(1ms);
  }
};

// The reference: the hollow driver's own cycle, on as many threads as the pool has.
double raw_driver_commands_per_s(const std::string& dir, std::size_t threads, double seconds) {
  rt::hollow_driver d(rt::hollow_options{dir, {}});
  std::atomic<std::uint64_t> cycles{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  const auto began = steady::now();
  for (std::size_t t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (std::uint64_t i = 0; !stop; ++i) {
        rt::create_request r;
        r.id = "raw-" + std::to_string(t) + "-" + std::to_string(i);
        d.create(r);
        d.start(r.id);
        d.pause(r.id, rt::pause_mode::filesystem);
        d.usage(r.id);
        d.resume(r.id);
        d.remove(r.id);
        ++cycles;
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts)
    t.join();
  return 4.0 * static_cast<double>(cycles) / seconds_since(began);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::size_t sandboxes = 100000;
  double seconds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--sandboxes" && i + 1 < argc)
      sandboxes = std::stoul(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc)
      seconds = std::stod(argv[++i]);
    else if (a == "--log-on-shm")
      log_on_shm = true;
    else if (a == "--scheduler-threads" && i + 1 < argc)
      scheduler_threads = std::stoul(argv[++i]);
    else if (a == "--pool-steps")
      pool_steps = true;
    else if (a == "--in-flight" && i + 1 < argc)
      cycles_in_flight = std::stoi(argv[++i]);
  }
  std::printf("control_plane_bench: %u cores, hollow driver on /dev/shm (steps on %s), file log "
              "on %s\n",
              std::thread::hardware_concurrency(), pool_steps ? "the pool" : "the actors' threads",
              log_on_shm ? "/dev/shm" : "disk");

  // --- throughput, closed loop ----------------------------------------------------------
  double commands_per_s = 0, p99_ms = 0, p50_ms = 0, offered = 0, raw_per_s = 0, cpu_us = 0;
  {
    node n;
    n.start();
    cycle_runner run{*n.plane};
    for (int i = 0; i < cycles_in_flight; ++i)
      run.start_cycle();
    std::this_thread::sleep_for(1s); // warm-up
    const auto s0 = n.plane->stats();
    const auto c0 = run.commands.load();
    const auto t0 = steady::now();
    const double cpu0 = cpu_seconds();
    const auto threads0 = read_thread_times();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const auto commands = static_cast<double>(run.commands.load() - c0);
    const double elapsed = seconds_since(t0);
    const auto threads1 = read_thread_times();
    commands_per_s = commands / elapsed;
    cpu_us = (cpu_seconds() - cpu0) * 1e6 / std::max(commands, 1.0);
    const auto s1 = n.plane->stats();
    run.drain();
    const auto rounds = static_cast<double>(s1.journal_rounds - s0.journal_rounds);
    std::printf("throughput: %.0f commands/s (create, pause, resume, delete; settled replies; "
                "%d cycles in flight), %llu failures; CPU %.1f us per command; journal: %.0f "
                "log appends/s, %.1f records each\n",
                commands_per_s, cycles_in_flight,
                static_cast<unsigned long long>(run.failures.load()), cpu_us, rounds / elapsed,
                static_cast<double>(s1.journal_records - s0.journal_records) /
                  std::max(rounds, 1.0));
    print_thread_times(threads0, threads1, std::max(commands, 1.0));

    // --- latency at half load, open loop -------------------------------------------------
    cycle_runner half{*n.plane};
    half.record = true;
    half.repeat = false;
    offered = commands_per_s / 2;
    const double cycles_per_s = offered / 4;
    const auto t1 = steady::now();
    std::uint64_t started = 0;
    while (seconds_since(t1) < seconds) {
      const auto due = static_cast<std::uint64_t>(seconds_since(t1) * cycles_per_s);
      while (started < due) {
        half.start_cycle();
        ++started;
      }
      std::this_thread::sleep_for(200us);
    }
    half.drain();
    p99_ms = percentile(half.latencies_ms, 0.99);
    p50_ms = percentile(half.latencies_ms, 0.50);
    std::printf("latency at %.0f commands/s offered: p50 %.2f ms, p99 %.2f ms (%zu commands)\n",
                offered, p50_ms, p99_ms, half.latencies_ms.size());
    raw_per_s = raw_driver_commands_per_s(n.shm + "/raw", n.options.runtime_threads, 2);
    std::printf("reference: the hollow driver alone, %zu threads: %.0f commands/s\n",
                n.options.runtime_threads, raw_per_s);
  }

  // --- idle paused sandboxes: memory, then recovery ---------------------------------------
  double bytes_per_idle = 0, recovery_s = 0, full_replay_s = 0;
  std::uint64_t recovered = 0, tail = 0, from_snapshot = 0, total_events = 0;
  {
    node n;
    n.start();
    malloc_trim(0);
    const std::size_t rss0 = rss_bytes();
    const auto t0 = steady::now();
    std::atomic<std::size_t> next{0}, done{0}, failures{0};
    // Each sandbox: create, pause, resume, pause — 10 events.
    std::function<void(std::string, int)> step = [&](std::string id, int k) {
      static const ac::command_body bodies[] = {cmd::pause{}, cmd::resume{}, cmd::pause{}};
      auto c = k == 0 ? create_command() : user(bodies[k - 1]);
      n.plane->submit(id, std::move(c), ac::reply_when::settled, [&, k](ac::command_reply r) {
        if (!r.ok())
          ++failures;
        if (r.ok() && k < 3) {
          step(r.state.sandbox_id, k + 1);
          return;
        }
        ++done;
        if (next.fetch_add(1) < sandboxes)
          step("", 0);
      });
    };
    for (int i = 0; i < 512; ++i)
      if (next.fetch_add(1) < sandboxes)
        step("", 0);
    while (done.load() < sandboxes)
      std::this_thread::sleep_for(10ms);
    const double fill_s = seconds_since(t0);
    while (n.plane->stats().active > 0)
      std::this_thread::sleep_for(50ms);
    malloc_trim(0);
    const std::size_t rss1 = rss_bytes();
    bytes_per_idle = static_cast<double>(rss1 - rss0) / static_cast<double>(sandboxes);
    auto st = n.plane->stats();
    for (std::int32_t p = 0; p < n.log->partitions(); ++p)
      total_events += static_cast<std::uint64_t>(n.log->end_offset(p).offset);
    std::printf("idle: %zu sandboxes paused in %.1f s (%zu failures), %zu dormant, %zu active, "
                "%zu timers; RSS %.1f -> %.1f MiB: %.0f bytes per idle sandbox\n",
                sandboxes, fill_s, failures.load(), st.dormant, st.active, st.timers,
                static_cast<double>(rss0) / 1048576.0, static_cast<double>(rss1) / 1048576.0,
                bytes_per_idle);

    // A restart: stop everything, reopen the log and the driver, recover.
    n.plane.reset();
    n.log.reset();
    n.driver.reset();
    const auto t1 = steady::now();
    n.open_driver();
    const double driver_open_s = seconds_since(t1);
    n.start();
    recovery_s = seconds_since(t1);
    const auto& rep = n.plane->recovery();
    recovered = rep.sandboxes;
    tail = rep.events_replayed;
    from_snapshot = rep.from_snapshot;
    std::printf("recovery: %.2f s for %llu sandboxes, %llu events in the log (%llu sandboxes "
                "from snapshots, %llu events replayed after them); of which: snapshots + "
                "replay %.2f s, listing the runtime (meanwhile) %.2f s, recover() %.2f s; "
                "opening the hollow driver before it %.2f s\n",
                recovery_s, static_cast<unsigned long long>(recovered),
                static_cast<unsigned long long>(total_events),
                static_cast<unsigned long long>(from_snapshot),
                static_cast<unsigned long long>(tail), rep.replay_seconds, rep.runtime_list_seconds,
                rep.seconds, driver_open_s);
    sandboxd::test::temp_dir none("bench-cp-nosnap");
    const auto t2 = steady::now();
    for (std::int32_t p = 0; p < n.log->partitions(); ++p)
      ac::recover_partition(*n.log, none.path(), p);
    full_replay_s = seconds_since(t2);
    std::printf("reference: replaying the whole log without snapshots: %.2f s\n", full_replay_s);
  }

  if (json)
    std::printf(
      "{\"commands_per_s\": %.0f, \"cpu_us_per_command\": %.1f, \"command_p99_ms\": %.2f, "
      "\"command_p50_ms\": %.2f, "
      "\"offered_commands_per_s\": %.0f, \"bytes_per_idle_sandbox\": %.0f, \"recovery_s\": %.3f, "
      "\"recovery_sandboxes\": %llu, \"recovery_log_events\": %llu, "
      "\"recovery_tail_events\": %llu, \"reference_full_replay_s\": %.3f, "
      "\"reference_hollow_driver_commands_per_s\": %.0f}\n",
      commands_per_s, cpu_us, p99_ms, p50_ms, offered, bytes_per_idle, recovery_s,
      static_cast<unsigned long long>(recovered), static_cast<unsigned long long>(total_events),
      static_cast<unsigned long long>(tail), full_replay_s, raw_per_s);
}
