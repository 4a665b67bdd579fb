// codec_bench — event encode and decode throughput on one thread, for a realistic mix of
// events (execs and their results, storage samples and file operations dominate; lifecycle
// events are rare). The reference, measured in the same run, is copying the same encoded
// records (memcpy into a reused buffer): the floor any codec pays to move the bytes.
//
//   codec_bench [--json] [--seconds S]
//
// Prints a table; with --json the last line is one JSON object with encode_per_s and
// decode_per_s: records per second of the thread's CPU time (one core's work, even when
// other processes share the machine), median of five rounds; *_per_wall_s are the same
// rounds over wall time.
#include "events/event.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <sched.h>
#include <string>
#include <vector>

using namespace sandboxd::events;
using namespace std::chrono_literals;
using bench_clock = std::chrono::steady_clock;

namespace {

std::string uuid_like(std::mt19937_64& rng) {
  static const char* hex = "0123456789abcdef";
  std::string s(36, '-');
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i != 8 && i != 13 && i != 18 && i != 23)
      s[i] = hex[rng() % 16];
  return s;
}

// One sandbox's worth of plausible events, weighted as a busy node sees them.
std::vector<event> realistic_mix(std::size_t n) {
  std::mt19937_64 rng(42);
  created c;
  c.template_name = "python-3.12-slim";
  c.limits = {2048, 1000, 512, 10240};
  c.timeouts = {15min, idle_action::pause_sandbox, pause_mode::memory, 8h, 72h};
  c.network = {network_mode::allow_list, {"pypi.org", "files.pythonhosted.org"}};
  c.labels = {{"team", "ml-evals"}, {"run", "2026-11-30-nightly"}};
  c.client_request_id = "req-5d1c7e0a";

  // (weight, payload)
  std::vector<std::pair<int, payload>> kinds{
    {25, exec_started{"exec-000123",
                      {"python3", "-c", "import numpy; print(numpy.__version__)"},
                      "/workspace",
                      30s}},
    {25, exec_finished{"exec-000123", 0, 0, 412'345'678ns, 1893, 0, false}},
    {12, storage_sampled{734'003'200}},
    {9, file_written{"/workspace/data/train-00017.parquet", 8'388'608, {}}},
    {9, file_read{"/workspace/out/metrics.json", 2311}},
    {2, c},
    {2, started{}},
    {2, pause_requested{pause_mode::memory, pause_reason::idle_timeout}},
    {2, paused{pause_mode::memory, 734'003'200}},
    {2, resume_requested{}},
    {2, resumed{}},
    {2, timeout_changed{c.timeouts}},
    {1, delete_requested{delete_reason::user}},
    {1, deleted{}},
    {1, snapshot_taken{"snap-42", 734'003'200}},
    {2, command_rejected{command_kind::exec, errc::conflict,
                         "sandbox sb_12 is paused (memory); cannot exec; resume it before exec"}},
    {1, failed{runtime_step::resuming, "runsc restore: exit status 128"}},
  };
  std::vector<int> weights;
  for (auto& k : kinds)
    weights.push_back(k.first);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());

  std::vector<event> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    event e;
    e.sandbox_id = "sb_" + std::to_string(rng() % 100000);
    e.sequence = 1 + rng() % 5000;
    e.event_id = e.sandbox_id + ":" + std::to_string(e.sequence);
    e.tenant = "tenant-" + std::to_string(rng() % 500);
    e.principal = "user-" + std::to_string(rng() % 5000) + "@example.com";
    e.occurred_at = time_point(nanoseconds(1'764'500'000'000'000'000 + rng() % 1'000'000'000'000));
    e.correlation_id = uuid_like(rng);
    e.causation_id = e.sandbox_id + ":" + std::to_string(e.sequence - 1);
    e.body = kinds[pick(rng)].second;
    out.push_back(std::move(e));
  }
  return out;
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Records per second of `op` over the records, in rounds of about `round` of wall time; the
// median of five. `per_cpu_s` divides by the thread's CPU time (what one core does when the
// machine is shared), `per_wall_s` by wall time.
struct rates {
  double per_cpu_s = 0;
  double per_wall_s = 0;
};

template <class Op>
rates measure(std::size_t records, bench_clock::duration round, Op op) {
  std::vector<double> cpu, wall;
  for (int r = 0; r < 5; ++r) {
    std::size_t done = 0;
    auto start = bench_clock::now();
    double cpu_start = thread_cpu_seconds();
    auto elapsed = bench_clock::duration::zero();
    do {
      for (std::size_t i = 0; i < records; ++i)
        op(i);
      done += records;
      elapsed = bench_clock::now() - start;
    } while (elapsed < round);
    cpu.push_back(static_cast<double>(done) / (thread_cpu_seconds() - cpu_start));
    wall.push_back(static_cast<double>(done) / std::chrono::duration<double>(elapsed).count());
  }
  std::sort(cpu.begin(), cpu.end());
  std::sort(wall.begin(), wall.end());
  return {cpu[cpu.size() / 2], wall[wall.size() / 2]};
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  double seconds = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0)
      json = true;
    else if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = std::atof(argv[++i]);
  }
  // One core: pin to the CPU we start on, so the figures are per core.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(sched_getcpu(), &set);
  sched_setaffinity(0, sizeof(set), &set);

  const auto events = realistic_mix(4096);
  std::vector<std::string> encoded;
  std::size_t total_bytes = 0;
  for (const auto& e : events) {
    encoded.push_back(encode(e));
    total_bytes += encoded.back().size();
  }
  const auto round =
    std::chrono::duration_cast<bench_clock::duration>(std::chrono::duration<double>(seconds / 5));

  std::string buf;
  std::size_t sink = 0;
  auto encode_rate = measure(events.size(), round, [&](std::size_t i) {
    buf.clear();
    sink += encode_to(events[i], buf);
  });
  auto encode_fresh_rate =
    measure(events.size(), round, [&](std::size_t i) { sink += encode(events[i]).size(); });
  auto decode_rate = measure(events.size(), round, [&](std::size_t i) {
    auto d = decode(encoded[i]);
    sink += d.ok() ? d.get().sequence : 1;
  });
  auto copy_rate = measure(events.size(), round, [&](std::size_t i) {
    buf.assign(encoded[i]);
    sink += buf.size();
  });

  double mean_bytes = static_cast<double>(total_bytes) / events.size();
  std::printf("codec_bench: %zu distinct events, mean record %.0f bytes, one thread\n",
              events.size(), mean_bytes);
  std::printf("  %-34s %16s %16s\n", "records per second", "per CPU second", "per wall second");
  auto row = [](const char* name, rates r) {
    std::printf("  %-34s %16.0f %16.0f\n", name, r.per_cpu_s, r.per_wall_s);
  };
  row("encode_to (reused buffer)", encode_rate);
  row("encode (new string per record)", encode_fresh_rate);
  row("decode", decode_rate);
  row("reference: copy the record bytes", copy_rate);
  std::printf("  (checksum %zu)\n", sink);
  if (json) {
    nlohmann::json j{{"benchmark", "codec_bench"},
                     {"events", events.size()},
                     {"mean_record_bytes", mean_bytes},
                     {"encode_per_s", encode_rate.per_cpu_s},
                     {"decode_per_s", decode_rate.per_cpu_s},
                     {"encode_fresh_string_per_s", encode_fresh_rate.per_cpu_s},
                     {"reference_copy_per_s", copy_rate.per_cpu_s},
                     {"encode_per_wall_s", encode_rate.per_wall_s},
                     {"decode_per_wall_s", decode_rate.per_wall_s},
                     {"reference_copy_per_wall_s", copy_rate.per_wall_s}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}
