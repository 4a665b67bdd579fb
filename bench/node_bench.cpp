// node_bench — one node in this process, as the daemon runs it: the file log (fsync on, on
// the disk under /tmp), the embedded PostgreSQL (fsync on), two projectors, the hollow
// driver (no processes: the control plane and the read models are what is measured).
//
//   projection_lag_p99_ms   a command acknowledged -> visible in the `sandboxes` read
//                           model, at --rate commands/s offered open loop (create, pause,
//                           resume, delete cycles; each reply when its step settled).
//                           Visible: a projector committed the offset of the command's last
//                           event (the same transaction writes the row). Target: at most 200.
// Reference, same run: append_to_visible_p99_ms, from the append of those events completing
// to the same commit — the projection's own share of the lag, without the reply's way back
// through the actor.
//
// Figures for the exec and file paths (exec_p50_ms, driver_exec_p50_ms, write_4k_p50_ms, ...)
// join this bench with the operations that produce them. Reference for the write, same run:
// log_append_p50_ms, one fdatasync'd append of an event-sized record to a file log on the
// same disk, interleaved with the execs and the writes (one after each; log_append_p50_ms is
// the mean of the two p50s); write_floor_vs_driver = (driver write + one such append, the
// p50 of those interleaved with the writes) /
// driver write: the least any design can cost that acknowledges a write only once something
// of it is durable in the log (docs/performance.md). For the exec, exec_floor_ms = driver
// exec + two such appends (the p50 of those interleaved with the execs; an exec is logged
// started and finished, each durable before it is acknowledged): exec_p50_ms against it is
// what the node itself adds. log_append_loop_p50_ms: the same append back to back (the
// reference before the appends were interleaved; a log whose threads just ran is faster).
//
// Usage: node_bench [--json] [--rate N] [--seconds S]
#include "events/file_log.hpp"
#include "node/node.hpp"
#include "node/runtime_set.hpp"
#include "tests/support/temp_dir.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace ac = sandboxd::actors;
namespace ev = sandboxd::events;
namespace nd = sandboxd::node;
namespace cmd = sandboxd::actors::cmd;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// Which command became visible when: the log's positions of each sandbox's latest events
// (from the append observer), the commands acknowledged and not yet visible, per partition,
// and the projectors' commits that make them visible.
class visibility {
public:
  void appended(const std::vector<std::string>& keys, const ev::append_result& r) {
    if (!r.ok())
      return;
    const auto now = steady::now();
    std::lock_guard l(mu_);
    for (std::size_t i = 0; i < keys.size(); ++i)
      last_[keys[i]] = position{r.positions[i].partition, r.positions[i].offset, now};
  }

  void acknowledged(const std::string& sandbox_id, bool measure) {
    const auto now = steady::now();
    std::lock_guard l(mu_);
    auto it = last_.find(sandbox_id);
    if (it == last_.end())
      return;
    const position p = it->second;
    if (!measure)
      return;
    if (committed_[p.partition] > p.offset) {
      lags_.push_back(0);
      append_lags_.push_back(ms_between(p.appended, now));
      return;
    }
    waiting_[p.partition].emplace(p.offset, waiting_command{now, p.appended});
  }

  void committed(const std::map<std::int32_t, std::int64_t>& moved) {
    const auto now = steady::now();
    std::lock_guard l(mu_);
    for (const auto& [partition, next] : moved) {
      committed_[partition] = std::max(committed_[partition], next);
      auto& w = waiting_[partition];
      for (auto it = w.begin(); it != w.end() && it->first < next; it = w.erase(it)) {
        lags_.push_back(ms_between(it->second.acknowledged, now));
        append_lags_.push_back(ms_between(it->second.appended, now));
      }
    }
  }

  std::size_t still_waiting() {
    std::lock_guard l(mu_);
    std::size_t n = 0;
    for (const auto& [p, w] : waiting_)
      n += w.size();
    return n;
  }
  std::vector<double> lags() {
    std::lock_guard l(mu_);
    return lags_;
  }
  std::vector<double> append_lags() {
    std::lock_guard l(mu_);
    return append_lags_;
  }

private:
  struct position {
    std::int32_t partition;
    std::int64_t offset;
    steady::time_point appended;
  };
  struct waiting_command {
    steady::time_point acknowledged;
    steady::time_point appended;
  };
  std::mutex mu_;
  std::unordered_map<std::string, position> last_;
  std::map<std::int32_t, std::int64_t> committed_;
  std::map<std::int32_t, std::multimap<std::int64_t, waiting_command>> waiting_;
  std::vector<double> lags_, append_lags_;
};

ac::command command_of(ac::command_body body) {
  ac::command c;
  c.tenant = "bench";
  c.principal = "bench";
  c.body = std::move(body);
  return c;
}

// Interleaved: `rounds` operations through the node's control plane (its actor, the log,
// the driver), the same operation on the driver alone, on one running crun sandbox, and the
// reference (one append to a file log of the bench's own), so that the three see the same
// machine.
struct op_figures {
  double node_p50 = 0, driver_p50 = 0, reference_p50 = 0;
};

template <class Node, class Direct, class Reference>
op_figures interleaved(int rounds, Node through_node, Direct direct, Reference reference) {
  std::vector<double> a, b, c;
  for (int i = 0; i < rounds + 5; ++i) {
    auto t0 = steady::now();
    through_node();
    auto t1 = steady::now();
    direct();
    auto t2 = steady::now();
    reference();
    auto t3 = steady::now();
    if (i >= 5) { // warm-up rounds left out
      a.push_back(ms_between(t0, t1));
      b.push_back(ms_between(t1, t2));
      c.push_back(ms_between(t2, t3));
    }
  }
  return {percentile(a, 0.5), percentile(b, 0.5), percentile(c, 0.5)};
}

struct exec_write_figures {
  op_figures exec, write;
  double log_append_p50 = 0;      // one fdatasync'd append to a file log in `ref_log_dir`
  double log_append_loop_p50 = 0; // the same, appended back to back
};

// exec -- true and a 4 KiB write through the node and on the driver, on crun.
std::optional<exec_write_figures> measure_operations(nd::node& n, const std::string& ref_log_dir) {
  ac::command co = command_of(cmd::create{[] {
    ev::created spec;
    spec.template_name = "base";
    spec.limits.memory_mib = 256;
    spec.limits.cpu_millicores = 500;
    spec.runtime = ev::runtime_kind::crun;
    return spec;
  }()});
  std::promise<ac::command_reply> made;
  n.submit("", std::move(co), ac::reply_when::settled,
           [&](ac::command_reply r) { made.set_value(std::move(r)); });
  auto r = made.get_future().get();
  if (!r.ok() || r.state.status != ac::sandbox_status::running) {
    std::printf("exec/write figures: the crun sandbox did not start (%s)\n",
                r.failure ? r.failure->message.c_str() : r.state.failure_reason.c_str());
    return std::nullopt;
  }
  const std::string id = r.state.sandbox_id;
  auto* driver = n.driver(ev::runtime_kind::crun);
  const ac::caller who{"bench", "bench", "node-bench"};
  bool failed = false;
  ev::file_log_options o;
  o.dir = ref_log_dir;
  o.partitions = 1;
  ev::file_log ref(o);
  const std::string record(200, 'e'); // about an encoded file_op_finished
  auto append = [&] { failed |= !ref.append({{"sb-ref", record}}).get().ok(); };
  exec_write_figures f;
  f.exec = interleaved(
    200,
    [&] {
      ac::exec_request e;
      e.argv = {"true"};
      std::promise<ac::op_result<ev::exec_finished>> done;
      n.plane().exec(id, who, std::move(e), {},
                     [&](ac::op_result<ev::exec_finished> x) { done.set_value(std::move(x)); });
      failed |= !done.get_future().get().ok();
    },
    [&] {
      sandboxd::runtime::exec_request e;
      e.argv = {"true"};
      failed |= !driver->exec(id, e).ok();
    },
    append);
  const std::string content(4096, 'x');
  f.write = interleaved(
    200,
    [&] {
      std::promise<ac::op_result<ev::file_op_finished>> done;
      n.plane().write_file(
        id, who, "/workspace/node.bin", content, 0644,
        [&](ac::op_result<ev::file_op_finished> x) { done.set_value(std::move(x)); });
      failed |= !done.get_future().get().ok();
    },
    [&] { failed |= !driver->write_file(id, "/workspace/driver.bin", content, 0644).ok(); },
    append);
  f.log_append_p50 = (f.exec.reference_p50 + f.write.reference_p50) / 2;
  // The same appends back to back, for comparison with earlier runs (which used this as the
  // reference): a log whose threads just ran answers faster than one woken after other work.
  f.log_append_loop_p50 = interleaved(
                            200, append, [] {}, [] {})
                            .node_p50;
  std::promise<ac::command_reply> gone;
  ac::command rm = command_of(cmd::remove{});
  n.submit(id, std::move(rm), ac::reply_when::settled,
           [&](ac::command_reply x) { gone.set_value(std::move(x)); });
  gone.get_future().get();
  if (failed) {
    std::printf("exec/write figures: an operation failed\n");
    return std::nullopt;
  }
  return f;
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  double rate = 1000, seconds = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--rate" && i + 1 < argc)
      rate = std::stod(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc)
      seconds = std::stod(argv[++i]);
  }
  spdlog::set_level(spdlog::level::warn);

  sandboxd::test::temp_dir dir("bench-node");
  ::chmod(dir.path().c_str(), 0711); // the embedded PostgreSQL's user traverses it
  visibility vis;
  nd::node_config c;
  c.data_dir = dir / "data";
  // crun beside the hollow driver, where it can run: exec and write through the node.
  const bool with_crun = !nd::runtime_unavailable(ev::runtime_kind::crun);
  c.runtimes = {ev::runtime_kind::hollow};
  if (with_crun)
    c.runtimes.push_back(ev::runtime_kind::crun);
  c.on_append = [&](const auto& keys, const auto& r) { vis.appended(keys, r); };
  c.on_projection_commit = [&](const auto& moved) { vis.committed(moved); };
  nd::node n(c);
  const auto t_start = steady::now();
  n.start();
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  std::printf("node_bench: %u cores, load average %.1f; node started in %.2f s (file log %d "
              "partitions, embedded PostgreSQL with fsync, %zu projectors, hollow driver)\n",
              std::thread::hardware_concurrency(), load[0],
              ms_between(t_start, steady::now()) / 1000, n.log().partitions(), c.projectors);

  // Open loop: a cycle (create, pause, resume, delete) starts every 4/rate s; each next
  // command goes out when the previous one's reply came.
  std::atomic<std::uint64_t> commands{0}, failures{0}, in_flight{0};
  std::atomic<bool> measuring{false};
  std::function<void(std::string, int)> step = [&](std::string id, int k) {
    static const ac::command_body bodies[] = {cmd::pause{}, cmd::resume{}, cmd::remove{}};
    ac::command co;
    if (k == 0) {
      ev::created spec;
      spec.template_name = "base";
      spec.limits.memory_mib = 256;
      spec.limits.cpu_millicores = 500;
      spec.runtime = ev::runtime_kind::hollow;
      co = command_of(cmd::create{spec});
    } else {
      co = command_of(bodies[k - 1]);
    }
    ++in_flight;
    const bool measure = measuring.load();
    n.submit(id, std::move(co), ac::reply_when::settled, [&, k, measure](ac::command_reply r) {
      if (!r.ok()) {
        ++failures;
        --in_flight;
        return;
      }
      ++commands;
      vis.acknowledged(r.state.sandbox_id, measure && measuring.load());
      if (k < 3)
        step(r.state.sandbox_id, k + 1);
      --in_flight;
    });
  };
  const double cycles_per_s = rate / 4;
  const double warmup = 1;
  const auto t0 = steady::now();
  std::uint64_t started = 0, c_measured0 = 0;
  steady::time_point tm0{};
  while (ms_between(t0, steady::now()) < (warmup + seconds) * 1000) {
    const double elapsed = ms_between(t0, steady::now()) / 1000;
    if (!measuring && elapsed >= warmup) {
      measuring = true;
      c_measured0 = commands.load();
      tm0 = steady::now();
    }
    const auto due = static_cast<std::uint64_t>(elapsed * cycles_per_s);
    for (; started < due; ++started)
      step("", 0);
    std::this_thread::sleep_for(200us);
  }
  const double achieved =
    static_cast<double>(commands.load() - c_measured0) / (ms_between(tm0, steady::now()) / 1000);
  measuring = false;
  while (in_flight.load() > 0)
    std::this_thread::sleep_for(5ms);
  n.catch_up();
  const auto deadline = steady::now() + 30s;
  while (vis.still_waiting() > 0 && steady::now() < deadline)
    std::this_thread::sleep_for(10ms);

  const auto lags = vis.lags(), append_lags = vis.append_lags();
  const double p50 = percentile(lags, 0.5), p99 = percentile(lags, 0.99),
               max = percentile(lags, 1.0);
  const double a50 = percentile(append_lags, 0.5), a99 = percentile(append_lags, 0.99);
  std::printf("offered %.0f commands/s for %.0f s (after %.0f s warm-up): achieved %.0f "
              "commands/s, %llu failures\n",
              rate, seconds, warmup, achieved, static_cast<unsigned long long>(failures.load()));
  std::printf("projection lag, acknowledged -> visible in sandboxes: p50 %.1f ms, p99 %.1f ms, "
              "max %.1f ms (%zu commands; target p99 <= 200 ms)\n",
              p50, p99, max, lags.size());
  std::printf("reference: append completed -> visible (the projection's own share): p50 %.1f ms, "
              "p99 %.1f ms\n",
              a50, a99);
  const auto st = n.status();
  for (std::size_t i = 0; i < st.projectors.size(); ++i)
    std::printf("projector %zu: %llu steps, %llu events applied, %llu failed steps%s%s\n", i,
                static_cast<unsigned long long>(st.projectors[i].steps),
                static_cast<unsigned long long>(st.projectors[i].applied),
                static_cast<unsigned long long>(st.projectors[i].failures),
                st.projectors[i].last_error.empty() ? "" : "; last error: ",
                st.projectors[i].last_error.c_str());
  std::optional<exec_write_figures> ops;
  if (with_crun)
    ops = measure_operations(n, dir / "ref-log");
  else
    std::printf("exec/write figures: skipped, crun cannot run here: %s\n",
                nd::runtime_unavailable(ev::runtime_kind::crun).value_or("").c_str());
  if (ops)
    std::printf("exec -- true, p50: through the node %.2f ms, the driver alone %.2f ms (x%.2f); "
                "4 KiB write, p50: %.2f ms vs %.2f ms (x%.2f, target <= 1.25)\n",
                ops->exec.node_p50, ops->exec.driver_p50, ops->exec.node_p50 / ops->exec.driver_p50,
                ops->write.node_p50, ops->write.driver_p50,
                ops->write.node_p50 / ops->write.driver_p50);
  if (ops)
    std::printf("reference: one fdatasync'd append to a file log on this disk, p50 %.2f ms "
                "(back to back %.2f ms); the floor of a write acknowledged once durable in the "
                "log: (%.2f + %.2f) / %.2f = x%.2f\n",
                ops->log_append_p50, ops->log_append_loop_p50, ops->write.driver_p50,
                ops->write.reference_p50, ops->write.driver_p50,
                (ops->write.driver_p50 + ops->write.reference_p50) / ops->write.driver_p50);
  if (ops)
    std::printf("exec -- true through the node p50 %.2f ms; floor exec_floor_ms (the driver's "
                "exec + 2 fdatasync'd appends) %.2f ms; target <= floor + 0.3 ms\n",
                ops->exec.node_p50, ops->exec.driver_p50 + 2 * ops->exec.reference_p50);
  n.stop();
  auto figure = [&](std::optional<double> v) {
    return v ? std::to_string(*v) : std::string("null");
  };
  const std::string op_json =
    ops ? ", \"exec_p50_ms\": " + figure(ops->exec.node_p50) +
            ", \"driver_exec_p50_ms\": " + figure(ops->exec.driver_p50) +
            ", \"exec_vs_driver\": " + figure(ops->exec.node_p50 / ops->exec.driver_p50) +
            ", \"exec_floor_ms\": " + figure(ops->exec.driver_p50 + 2 * ops->exec.reference_p50) +
            ", \"write_4k_p50_ms\": " + figure(ops->write.node_p50) +
            ", \"driver_write_4k_p50_ms\": " + figure(ops->write.driver_p50) +
            ", \"write_vs_driver\": " + figure(ops->write.node_p50 / ops->write.driver_p50) +
            ", \"log_append_p50_ms\": " + figure(ops->log_append_p50) +
            ", \"log_append_loop_p50_ms\": " + figure(ops->log_append_loop_p50) +
            ", \"write_floor_vs_driver\": " +
            figure((ops->write.driver_p50 + ops->write.reference_p50) / ops->write.driver_p50)
        : std::string(", \"exec_p50_ms\": null, \"driver_exec_p50_ms\": null, "
                      "\"exec_vs_driver\": null, \"exec_floor_ms\": null, "
                      "\"write_4k_p50_ms\": null, "
                      "\"driver_write_4k_p50_ms\": null, \"write_vs_driver\": null, "
                      "\"log_append_p50_ms\": null, \"log_append_loop_p50_ms\": null, "
                      "\"write_floor_vs_driver\": null");
  if (json)
    std::printf("{\"projection_lag_p99_ms\": %.1f, \"projection_lag_p50_ms\": %.1f, "
                "\"projection_lag_max_ms\": %.1f, \"append_to_visible_p99_ms\": %.1f, "
                "\"append_to_visible_p50_ms\": %.1f, \"offered_commands_per_s\": %.0f, "
                "\"commands_per_s\": %.0f, \"lag_samples\": %zu, \"failures\": %llu, "
                "\"target_projection_lag_p99_ms\": 200%s}\n",
                p99, p50, max, a99, a50, rate, achieved, lags.size(),
                static_cast<unsigned long long>(failures.load()), op_json.c_str());
}
