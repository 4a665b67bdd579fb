// replay_bench — how fast sandboxd folds its own log: every record of a file log decoded
// and applied with the state machine's evolve, one thread, as replay and recovery do it;
// and how long verifying the read models against the log takes.
//
//   replay_bench [--json] [--events N] [--no-verify]
//
// The log: N events (default 1,000,000) of the projection tests' mixed lifecycle stream
// (tests/projections/lifecycle_stream.hpp: about 17 events per sandbox, sandboxes
// interleaved), in a file log of 8 partitions, read through file_log_reader (mapped
// read-only, every record's CRC checked).
// replay_events_per_s: every record of the log decoded (events::decode) and folded into its
//   sandbox's state (actors::apply, evolve in place), the states kept in one hash table by id
//   (replay::fold_log, what `sandboxctl check determinism` replays with); one thread, the
//   records read in file order (file_log_reader::visit_all). Events per CPU-second of the
//   folding thread (CLOCK_THREAD_CPUTIME_ID): what one core does, whatever else the machine
//   runs. Best of 5 passes. After the passes, every state fold_log made is compared with a
//   plain evolve fold of the same log (the bench fails if one differs).
// decode_only_events_per_s: the reference, same run, same records, same order: decode alone.
//   Best of 5, per CPU-second.
//   The difference between the two is what evolve and the state table cost.
// replay_events_per_wall_s, decode_only_events_per_wall_s: the same passes by the wall clock
//   (best of 5), which on a shared machine also counts the time other processes ran.
// verify_s: the log projected into the read models of a private PostgreSQL (not timed),
//   then projections::rebuild_and_compare — the log from offset zero into a scratch schema
//   and compared with the live one in one snapshot, as `projections verify` does — timed.
// With --json the last line is one JSON object with these figures.
#include "actors/sandbox_machine.hpp"
#include "events/file_log.hpp"
#include "events/file_log_reader.hpp"
#include "projections/projector.hpp"
#include "projections/rebuild.hpp"
#include "replay/log_states.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include <time.h>

using namespace sandboxd;
using bench_clock = std::chrono::steady_clock;

namespace {

double seconds_since(bench_clock::time_point t0) {
  return std::chrono::duration<double>(bench_clock::now() - t0).count();
}

// One pass over every record of the log, in the order the records lie in the segments
// (file_log_reader::visit_all): with `fold`, replay::fold_log (decode and apply, every
// sandbox's state in one table); without, decode alone. Returns the records seen; `check` is
// a figure of the result that the compiler cannot drop.
std::uint64_t pass(events::file_log_reader& log, bool fold, std::uint64_t& check) {
  check = 0;
  if (fold) {
    auto states = replay::fold_log(log);
    std::uint64_t n = 0;
    for (const auto& s : states) {
      n += s.sequence; // dense sequences: a sandbox's last one is its count of events
      check += s.sequence + static_cast<std::uint64_t>(s.status);
    }
    return n;
  }
  std::uint64_t n = 0;
  log.visit_all([&](std::int32_t p, std::int64_t offset, std::string_view, std::string_view value) {
    auto d = events::decode(value);
    if (!d.ok())
      throw std::runtime_error("partition " + std::to_string(p) + " offset " +
                               std::to_string(offset) + ": " + d.failure().message);
    ++n;
    check += d.get().sequence;
    return true;
  });
  return n;
}

// Seconds of CPU the calling thread has used: a pass's cost on one core, which the other
// processes of a shared machine do not inflate the way they inflate wall-clock time.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct rates {
  double per_cpu_s = 0;  // events per CPU-second of the passing thread, best pass
  double per_wall_s = 0; // events per wall-clock second, best pass
};

rates best_rate(events::file_log_reader& log, bool fold, std::uint64_t expect,
                std::uint64_t& check) {
  rates best;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = bench_clock::now();
    const double c0 = thread_cpu_seconds();
    const auto n = pass(log, fold, check);
    const double cpu = thread_cpu_seconds() - c0;
    const double wall = seconds_since(t0);
    if (n != expect)
      throw std::runtime_error("read " + std::to_string(n) + " of " + std::to_string(expect) +
                               " records");
    best.per_cpu_s = std::max(best.per_cpu_s, static_cast<double>(n) / cpu);
    best.per_wall_s = std::max(best.per_wall_s, static_cast<double>(n) / wall);
  }
  return best;
}

// The states fold_log made, against a plain fold of the same log: partition by partition,
// actors::evolve on a copy of each state per record (the actor's own path). Throws on the
// first sandbox whose states differ: a fast fold that folds differently is no result.
void check_states(events::file_log_reader& log) {
  const auto fast = replay::fold_log(log);
  std::unordered_map<std::string, actors::sandbox_state> plain;
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    log.visit(p, 0, [&](std::int64_t, std::string_view key, std::string_view value) {
      auto [it, made] =
        plain.try_emplace(std::string(key), actors::initial_state(std::string(key)));
      it->second = actors::evolve(it->second, events::decode(value).get());
      return true;
    });
  if (plain.size() != fast.size())
    throw std::runtime_error("fold_log made " + std::to_string(fast.size()) + " states, evolve " +
                             std::to_string(plain.size()));
  for (const auto& [id, s] : plain) {
    const auto* f = fast.find(id);
    if (f == nullptr || !(*f == s))
      throw std::runtime_error("fold_log's state of " + id + " differs from evolve's");
  }
}

} // namespace

int main(int argc, char** argv) {
  bool as_json = false, verify = true;
  std::uint64_t events_wanted = 1'000'000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json"))
      as_json = true;
    else if (!std::strcmp(argv[i], "--no-verify"))
      verify = false;
    else if (!std::strcmp(argv[i], "--events") && i + 1 < argc)
      events_wanted = std::stoull(argv[++i]);
    else {
      std::fprintf(stderr, "usage: replay_bench [--json] [--events N] [--no-verify]\n");
      return 2;
    }
  }

  // Enough sandboxes for N events (their mean count measured on a sample); a prefix of the
  // round-robin stream keeps every sandbox's events in order.
  constexpr std::int64_t t0_ns = 1'700'000'000'000'000'000;
  const double per_sandbox = static_cast<double>(test::mixed_stream(1000, 20, t0_ns).size()) / 1000;
  auto stream = test::mixed_stream(
    static_cast<int>(static_cast<double>(events_wanted) / per_sandbox * 1.02) + 1, 20, t0_ns);
  stream.resize(std::min<std::size_t>(stream.size(), events_wanted));
  test::temp_dir dir("replay-bench");
  {
    events::file_log_options o;
    o.dir = dir / "log";
    o.partitions = 8;
    events::file_log log(o);
    test::append_all(log, stream, 5000);
  }
  std::uint64_t log_bytes = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir / "log"))
    if (f.is_regular_file())
      log_bytes += f.file_size();

  events::file_log_reader reader(dir / "log");
  std::uint64_t decode_check = 0, replay_check = 0;
  const auto decode_rate = best_rate(reader, false, stream.size(), decode_check);
  const auto replay_rate = best_rate(reader, true, stream.size(), replay_check);
  check_states(reader);
  std::printf("log: %zu events, %.1f MiB in 8 partitions; fold_log's states equal evolve's\n",
              stream.size(), static_cast<double>(log_bytes) / (1 << 20));
  std::printf("replay_events_per_s      %12.0f  (decode + evolve, per CPU-second of one thread; "
              "target >= 2,000,000)\n",
              replay_rate.per_cpu_s);
  std::printf("decode_only_events_per_s %12.0f  (reference: decode alone, per CPU-second)\n",
              decode_rate.per_cpu_s);
  std::printf("replay_events_per_wall_s      %12.0f  decode_only_events_per_wall_s %12.0f  "
              "(wall clock; lower on a busy machine)\n",
              replay_rate.per_wall_s, decode_rate.per_wall_s);

  nlohmann::json out{{"events", stream.size()},
                     {"log_bytes", log_bytes},
                     {"replay_events_per_s", replay_rate.per_cpu_s},
                     {"decode_only_events_per_s", decode_rate.per_cpu_s},
                     {"replay_events_per_wall_s", replay_rate.per_wall_s},
                     {"decode_only_events_per_wall_s", decode_rate.per_wall_s}};
  if (verify) {
    test::pg_server pg;
    events::file_log_options o;
    o.dir = dir / "log";
    o.partitions = 8;
    events::file_log log(o);
    projections::projector_options po;
    po.schema = "live";
    const auto t_project = bench_clock::now();
    projections::projector(log, pg.conninfo(), po).catch_up();
    const double project_s = seconds_since(t_project);
    const auto t0 = bench_clock::now();
    auto report = projections::rebuild_and_compare(log, pg.conninfo(), "live", "verify");
    const double verify_s = seconds_since(t0);
    if (!report.differences.empty())
      throw std::runtime_error("verify found " + std::to_string(report.differences.size()) +
                               " differences in a fresh projection");
    std::printf("verify_s                 %12.1f  (rebuild into a scratch schema + compare, "
                "%zu live rows; projecting it live took %.1f s)\n",
                verify_s, report.rows_compared, project_s);
    out["verify_s"] = verify_s;
    out["verify_rows_compared"] = report.rows_compared;
    out["project_s"] = project_s;
  }
  if (as_json)
    std::printf("%s\n", out.dump().c_str());
  return 0;
}
