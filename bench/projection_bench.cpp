// projection_bench — how fast the projector applies a mixed lifecycle stream to all three
// read models (sandboxes, billing meters, audit log) in a private PostgreSQL, and how far
// behind the log it stays at a steady rate.
//
//   projection_bench [--json] [--sandboxes N] [--rate EVENTS_PER_S] [--seconds S] [--batch B]
//                    [--projectors P]
//
// events_per_s: a backlog of the mixed stream in file_log, projected from offset zero with
//   catch_up() (batches of at most B events, one transaction each; default the projector's
//   max_batch) in the deployment docs/projections.md describes for a projection: P
//   projectors of it (default 2, this machine's cores), each owning every P-th partition,
//   with a thread and a PostgreSQL backend of its own. events_per_s_one_projector: the same
//   backlog, in a schema of its own, by one projector owning every partition (measured
//   first, every run; with --projectors 1 the two figures are the same run). CPU per event
//   is reported for the projector's process and PostgreSQL apart, and for the projectors'
//   step threads alone (step_thread_cpu_us_per_event, summed over projectors): a step
//   thread and its backend take turns, so on an idle machine one projector's step thread
//   and backend CPU bound its time per event from below, whatever its other threads do
//   beside them.
// copy_rows_per_s: the reference, same run and same server: a raw COPY (pqxx::stream_to)
//   of the audit rows of the same events into a table like audit_log (same indexes) —
//   what PostgreSQL ingests when nothing is computed, read or upserted.
// lag_p99_ms: a producer appends to a fresh log at a steady rate while the P projectors run
//   in the background; per event, the time from issuing its append to the commit of the
//   batch that applied it; the 99th percentile.
// With --json the last line is one JSON object with these figures.
#include "events/file_log.hpp"
#include "projections/audit_log.hpp"
#include "projections/projector.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace sandboxd;
using namespace sandboxd::projections;
using namespace std::chrono_literals;
using bench_clock = std::chrono::steady_clock;

namespace {

// CPU seconds used so far by this process and by every process of the PostgreSQL server
// (the postmaster's children): on a shared, overloaded machine the wall clock measures the
// neighbours too; events per CPU-second is what one uncontended core would do.
struct cpu_split {
  double self = 0;   // this process
  double server = 0; // the PostgreSQL server's processes
  double thread = 0; // the calling thread alone (of `self`)
  double total() const { return self + server; }
  cpu_split operator-(const cpu_split& o) const {
    return {self - o.self, server - o.server, thread - o.thread};
  }
};

double seconds_of(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

cpu_split cpu_seconds(const std::string& pg_dir) {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  cpu_split total;
  total.self = seconds_of(self);
  rusage thread{};
  ::getrusage(RUSAGE_THREAD, &thread);
  total.thread = seconds_of(thread);
  std::ifstream pidfile(pg_dir + "/data/postmaster.pid");
  long postmaster = 0;
  pidfile >> postmaster;
  double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    long ppid = 0, skip = 0, utime = 0, stime = 0;
    fields >> state >> ppid;
    for (int i = 0; i < 9; ++i)
      fields >> skip;
    fields >> utime >> stime;
    if (std::stol(name) == postmaster || ppid == postmaster)
      total.server += static_cast<double>(utime + stime) / ticks;
  }
  return total;
}

double seconds_since(bench_clock::time_point t0) {
  return std::chrono::duration<double>(bench_clock::now() - t0).count();
}

events::file_log_options log_options(const std::string& dir) {
  events::file_log_options o;
  o.dir = dir;
  o.partitions = 8;
  return o;
}

struct throughput {
  double per_s = 0;             // wall clock
  double per_cpu_s = 0;         // CPU of this process and the server
  double self_us_per_row = 0;   // CPU of this process, microseconds per event or row
  double server_us_per_row = 0; // CPU of the server, microseconds per event or row
  // CPU of the thread that runs the steps (catch_up's caller), microseconds per event: the
  // projector's part of the critical path; its other threads (prefetch, audit hashing) run
  // beside PostgreSQL's work.
  double step_thread_us_per_row = 0;
};

throughput figures(double rows, double wall_s, const cpu_split& cpu) {
  return {rows / wall_s, rows / cpu.total(), cpu.self * 1e6 / rows, cpu.server * 1e6 / rows,
          cpu.thread * 1e6 / rows};
}

// With `projectors` > 1, that many projectors of the one projection, each owning every
// projectors-th partition (the scale-out plan), catch up at once, each on a thread of its
// own; its step-thread CPU is then the sum over those threads.
throughput measure_backlog(const test::pg_server& pg, const std::string& log_dir,
                           const std::string& schema, const std::vector<events::event>& stream,
                           std::size_t batch, int projectors) {
  const std::string conninfo = pg.conninfo();
  events::file_log log(log_options(log_dir));
  test::append_all(log, stream, 5000);
  std::vector<std::unique_ptr<projector>> ps;
  for (int k = 0; k < projectors; ++k) {
    projector_options o;
    o.schema = schema;
    o.max_batch = batch;
    for (std::int32_t part = k; part < log.partitions(); part += projectors)
      o.partitions.push_back(part);
    ps.push_back(std::make_unique<projector>(log, conninfo, o));
  }
  auto t0 = bench_clock::now();
  auto cpu0 = cpu_seconds(pg.dir());
  double threads_s = 0;
  if (projectors == 1) {
    ps[0]->catch_up();
  } else {
    std::vector<double> thread_s(ps.size());
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < ps.size(); ++k)
      threads.emplace_back([&, k] {
        rusage a{}, b{};
        ::getrusage(RUSAGE_THREAD, &a);
        ps[k]->catch_up();
        ::getrusage(RUSAGE_THREAD, &b);
        thread_s[k] = seconds_of(b) - seconds_of(a);
      });
    for (auto& t : threads)
      t.join();
    for (double v : thread_s)
      threads_s += v;
  }
  double s = seconds_since(t0);
  auto cpu = cpu_seconds(pg.dir()) - cpu0;
  if (projectors > 1)
    cpu.thread = threads_s;
  std::uint64_t applied = 0;
  for (const auto& p : ps)
    applied += p->status().applied;
  if (applied != stream.size())
    throw std::runtime_error("projected " + std::to_string(applied) + " of " +
                             std::to_string(stream.size()) + " events");
  return figures(static_cast<double>(stream.size()), s, cpu);
}

throughput measure_copy(const test::pg_server& pg, const std::vector<events::event>& stream) {
  const std::string conninfo = pg.conninfo();
  std::vector<audit_row> rows;
  rows.reserve(stream.size());
  std::int64_t pos = 0;
  for (const auto& e : stream) {
    auto r = audit_row_of(e, 0);
    r.position = ++pos;
    link(r, audit_genesis_hash());
    rows.push_back(std::move(r));
  }
  pqxx::connection c(conninfo);
  {
    pqxx::work tx(c);
    tx.exec("CREATE TABLE bench_one.copy_reference (LIKE bench_one.audit_log INCLUDING ALL)");
    tx.commit();
  }
  auto t0 = bench_clock::now();
  auto cpu0 = cpu_seconds(pg.dir());
  pqxx::work tx(c);
  const std::size_t chunk = 5000; // one COPY per batch, as the projector writes
  for (std::size_t i = 0; i < rows.size(); i += chunk) {
    pqxx::stream_to copy(tx, "bench_one.copy_reference",
                         std::vector<std::string>{"tenant", "partition", "position", "event_id",
                                                  "occurred_at_ns", "principal", "action",
                                                  "sandbox_id", "outcome", "detail", "prev_hash",
                                                  "hash"});
    for (std::size_t j = i; j < std::min(rows.size(), i + chunk); ++j) {
      const auto& r = rows[j];
      copy << std::make_tuple(r.tenant, std::to_string(r.partition), std::to_string(r.position),
                              r.event_id, std::to_string(r.occurred_at_ns), r.principal, r.action,
                              r.sandbox_id, r.outcome, r.detail, "\\x" + r.prev_hash,
                              "\\x" + r.hash); // bytea's hex input form
    }
    copy.complete();
  }
  tx.commit();
  double s = seconds_since(t0);
  auto cpu = cpu_seconds(pg.dir()) - cpu0;
  return figures(static_cast<double>(rows.size()), s, cpu);
}

struct lag_figures {
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  std::size_t events = 0;
  double achieved_rate = 0;
};

lag_figures measure_lag(const std::string& conninfo, const std::string& log_dir, int rate,
                        double seconds, std::size_t batch, int projectors) {
  events::file_log log(log_options(log_dir));
  struct commit_mark {
    std::int32_t partition;
    std::int64_t next_offset;
    bench_clock::time_point at;
  };
  std::mutex mutex;
  std::vector<commit_mark> commits;
  std::vector<std::unique_ptr<projector>> ps;
  for (int k = 0; k < projectors; ++k) {
    projector_options o;
    o.schema = "bench_lag";
    o.max_batch = batch;
    for (std::int32_t part = k; part < log.partitions(); part += projectors)
      o.partitions.push_back(part);
    o.on_commit = [&](const std::map<std::int32_t, std::int64_t>& moved) {
      auto now = bench_clock::now();
      std::lock_guard lock(mutex);
      for (auto [p, off] : moved)
        commits.push_back({p, off, now});
    };
    ps.push_back(std::make_unique<projector>(log, conninfo, o));
  }
  for (auto& p : ps)
    p->catch_up(); // connect and migrate before the clock starts
  for (auto& p : ps)
    p->start();

  std::size_t total = static_cast<std::size_t>(rate * seconds);
  int sandboxes = static_cast<int>(total / 17) + 1;
  auto stream = test::mixed_stream(sandboxes, 20, 1'700'000'000'000'000'000);
  stream.resize(std::min(stream.size(), total));
  struct sent {
    events::record_position at;
    bench_clock::time_point issued;
  };
  std::vector<sent> sent_records;
  const auto tick = 10ms;
  const std::size_t per_tick = static_cast<std::size_t>(rate) / 100;
  auto t0 = bench_clock::now();
  for (std::size_t i = 0; i < stream.size(); i += per_tick) {
    std::this_thread::sleep_until(t0 + tick * static_cast<int>(i / per_tick));
    std::vector<events::event> part(
      stream.begin() + static_cast<std::ptrdiff_t>(i),
      stream.begin() + static_cast<std::ptrdiff_t>(std::min(stream.size(), i + per_tick)));
    auto issued = bench_clock::now();
    auto r = log.append(test::to_records(part)).get();
    if (!r.ok())
      throw std::runtime_error("append failed: " + r.failure->message);
    for (const auto& pos : r.positions)
      sent_records.push_back({pos, issued});
  }
  double send_s = seconds_since(t0);
  for (;;) {
    std::int64_t behind = 0;
    for (auto& p : ps)
      for (const auto& l : p->lag())
        behind += l.lag();
    if (behind == 0)
      break;
    std::this_thread::sleep_for(5ms);
  }
  for (auto& p : ps)
    p->stop();

  std::vector<double> lags;
  std::lock_guard lock(mutex);
  for (const auto& s : sent_records) {
    for (const auto& c : commits)
      if (c.partition == s.at.partition && c.next_offset > s.at.offset) {
        lags.push_back(std::chrono::duration<double, std::milli>(c.at - s.issued).count());
        break;
      }
  }
  std::sort(lags.begin(), lags.end());
  lag_figures f;
  f.events = lags.size();
  f.achieved_rate = static_cast<double>(sent_records.size()) / send_s;
  if (!lags.empty()) {
    f.p50_ms = lags[lags.size() / 2];
    f.p99_ms = lags[std::min(lags.size() - 1, lags.size() * 99 / 100)];
    f.max_ms = lags.back();
  }
  return f;
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  int sandboxes = 9000;
  int rate = 5000;
  double seconds = 10;
  std::size_t batch = projector_options{}.max_batch;
  int projectors = 2; // the deployment of a projection on this machine's 2 cores
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--sandboxes") && i + 1 < argc)
      sandboxes = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--rate") && i + 1 < argc)
      rate = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = static_cast<std::size_t>(std::atol(argv[++i]));
    else if (!std::strcmp(argv[i], "--projectors") && i + 1 < argc)
      projectors = std::max(1, std::min(8, std::atoi(argv[++i])));
    else {
      std::fprintf(stderr,
                   "usage: %s [--json] [--sandboxes N] [--rate R] [--seconds S] [--batch B]"
                   " [--projectors P]\n",
                   argv[0]);
      return 2;
    }
  }
  test::pg_server pg;
  test::temp_dir dir("projection-bench");
  auto stream = test::mixed_stream(sandboxes, 50, 1'700'000'000'000'000'000);

  auto print = [&](int p, const throughput& t) {
    std::printf("%d projector(s), all three read models, batches of %zu: %zu events, %.0f"
                " events/s, %.0f per CPU-s (CPU per event: projector %.1f us, of it its step"
                " thread(s) %.1f us; PostgreSQL %.1f us)\n",
                p, batch, stream.size(), t.per_s, t.per_cpu_s, t.self_us_per_row,
                t.step_thread_us_per_row, t.server_us_per_row);
  };
  // The single projector first, in a schema of its own; then the deployment measured.
  auto one = measure_backlog(pg, dir / "backlog_one", "bench_one", stream, batch, 1);
  print(1, one);
  auto projected = one;
  if (projectors > 1) {
    projected = measure_backlog(pg, dir / "backlog", "bench", stream, batch, projectors);
    print(projectors, projected);
  }
  auto copied = measure_copy(pg, stream);
  std::printf("reference, raw COPY of the audit rows: %.0f rows/s, %.0f per CPU-s (CPU per row:"
              " client %.1f us, PostgreSQL %.1f us)\n",
              copied.per_s, copied.per_cpu_s, copied.self_us_per_row, copied.server_us_per_row);
  double load[1] = {0};
  ::getloadavg(load, 1);
  std::printf("load average during the run: %.1f on %ld cores\n", load[0],
              ::sysconf(_SC_NPROCESSORS_ONLN));
  auto lag = measure_lag(pg.conninfo(), dir / "steady", rate, seconds, batch, projectors);
  std::printf("steady %d events/s (achieved %.0f) for %.0f s: lag p50 %.1f ms, p99 %.1f ms, "
              "max %.1f ms over %zu events\n",
              rate, lag.achieved_rate, seconds, lag.p50_ms, lag.p99_ms, lag.max_ms, lag.events);
  if (json) {
    nlohmann::json j = {{"events_per_s", static_cast<long>(projected.per_s)},
                        {"copy_rows_per_s", static_cast<long>(copied.per_s)},
                        {"events_per_cpu_s", static_cast<long>(projected.per_cpu_s)},
                        {"projector_cpu_us_per_event", projected.self_us_per_row},
                        {"step_thread_cpu_us_per_event", projected.step_thread_us_per_row},
                        {"server_cpu_us_per_event", projected.server_us_per_row},
                        {"batch", batch},
                        {"projectors", projectors},
                        {"events_per_s_one_projector", static_cast<long>(one.per_s)},
                        {"events_per_cpu_s_one_projector", static_cast<long>(one.per_cpu_s)},
                        {"projector_cpu_us_per_event_one_projector", one.self_us_per_row},
                        {"step_thread_cpu_us_per_event_one_projector", one.step_thread_us_per_row},
                        {"server_cpu_us_per_event_one_projector", one.server_us_per_row},
                        {"copy_rows_per_cpu_s", static_cast<long>(copied.per_cpu_s)},
                        {"load_average", load[0]},
                        {"lag_p99_ms", lag.p99_ms},
                        {"lag_p50_ms", lag.p50_ms},
                        {"events", stream.size()},
                        {"steady_rate", rate},
                        {"steady_events", lag.events}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}
