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
// replay_events_per_s: every record of every partition decoded (events::decode) and folded
//   into its sandbox's state (actors::evolve), the states kept in one hash table by id; one
//   thread. Best of 3 passes.
// decode_only_events_per_s: the reference, same run, same records: decode alone. Best of 3.
//   The difference between the two is what evolve and the state table cost.
// verify_s: the log projected into the read models of a private PostgreSQL (not timed),
//   then projections::rebuild_and_compare — the log from offset zero into a scratch schema
//   and compared with the live one in one snapshot, as `projections verify` does — timed.
// With --json the last line is one JSON object with these figures.
#include "actors/sandbox_machine.hpp"
#include "events/file_log.hpp"
#include "events/file_log_reader.hpp"
#include "projections/projector.hpp"
#include "projections/rebuild.hpp"
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

using namespace sandboxd;
using bench_clock = std::chrono::steady_clock;

namespace {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

double seconds_since(bench_clock::time_point t0) {
  return std::chrono::duration<double>(bench_clock::now() - t0).count();
}

// One pass over every record of the log: decode, and with `fold` evolve. Returns the
// records seen; `check` is a figure of the result that the compiler cannot drop.
std::uint64_t pass(const events::file_log_reader& log, bool fold, std::uint64_t& check) {
  std::unordered_map<std::string, actors::sandbox_state, string_hash, std::equal_to<>> states;
  states.reserve(1 << 16);
  std::uint64_t n = 0;
  check = 0;
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    auto failed =
      log.visit(p, 0, [&](std::int64_t offset, std::string_view key, std::string_view value) {
        auto d = events::decode(value);
        if (!d.ok())
          throw std::runtime_error("partition " + std::to_string(p) + " offset " +
                                   std::to_string(offset) + ": " + d.failure().message);
        ++n;
        if (!fold) {
          check += d.get().sequence;
          return true;
        }
        auto it = states.find(key);
        if (it == states.end())
          it = states.emplace(std::string(key), actors::initial_state(std::string(key))).first;
        it->second = actors::evolve(std::move(it->second), d.get());
        return true;
      });
    if (failed)
      throw std::runtime_error(failed->message);
  }
  for (const auto& [id, s] : states)
    check += s.sequence;
  return n;
}

double best_rate(const events::file_log_reader& log, bool fold, std::uint64_t expect,
                 std::uint64_t& check) {
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = bench_clock::now();
    const auto n = pass(log, fold, check);
    const double s = seconds_since(t0);
    if (n != expect)
      throw std::runtime_error("read " + std::to_string(n) + " of " + std::to_string(expect) +
                               " records");
    best = std::max(best, static_cast<double>(n) / s);
  }
  return best;
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
  const double decode_rate = best_rate(reader, false, stream.size(), decode_check);
  const double replay_rate = best_rate(reader, true, stream.size(), replay_check);
  std::printf("log: %zu events, %.1f MiB in 8 partitions\n", stream.size(),
              static_cast<double>(log_bytes) / (1 << 20));
  std::printf("replay_events_per_s      %12.0f  (decode + evolve, one thread; target >= "
              "2,000,000)\n",
              replay_rate);
  std::printf("decode_only_events_per_s %12.0f  (reference: decode alone)\n", decode_rate);

  nlohmann::json out{{"events", stream.size()},
                     {"log_bytes", log_bytes},
                     {"replay_events_per_s", replay_rate},
                     {"decode_only_events_per_s", decode_rate}};
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
