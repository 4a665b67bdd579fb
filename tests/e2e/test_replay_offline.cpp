// Offline replay of a recorded session: a sandboxd on the hollow runtime and a clock file
// is driven by sandboxctl (create, set-timeout, pause in memory, resume, pause, delete) with
// `get` after each step; then, with no daemon running, `sandboxctl replay` on a copy of its
// data directory prints, at every sequence number `get` answered, the state `get` showed,
// and at chosen instants the state of that moment; `diff` names what a pause changed; the
// copy is byte for byte the same before and after. Through the daemon (admin scope) replay
// prints what it prints offline. The same log copied to a topic of the
// real Kafka broker replays to the same output with --brokers.
#define BOOST_TEST_MODULE replay_offline
#include "tests/e2e/e2e_support.hpp"

#include "events/file_log_reader.hpp"
#include "events/kafka_log.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/dir_fingerprint.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_log_options.hpp"

using namespace sandboxd::test;
namespace events = sandboxd::events;

namespace {

constexpr std::int64_t k_minute_ns = 60'000'000'000;
constexpr std::int64_t k_t0 = 1'767'225'600'000'000'000; // 2026-01-01T00:00:00Z

void set_clock(const std::string& path, std::int64_t ns) {
  {
    std::ofstream f(path + ".next");
    f << ns << "\n";
  }
  std::filesystem::rename(path + ".next", path);
}

ctl_result offline(const std::vector<std::string>& args) {
  return run_process(sandboxctl_bin(), args, {});
}

std::vector<json> replay_lines(const std::vector<std::string>& args) {
  auto r = offline(args);
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "sandboxctl replay: " << r);
  return r.lines();
}

// What `get` showed, as the replayed state must show it.
void check_state_matches_get(const json& state, const json& got) {
  BOOST_TEST(state["status"] == got["state"], state.dump() << " vs " << got.dump());
  BOOST_TEST(state["sequence"] == got["sequence"]);
  BOOST_TEST(state["writable_layer_bytes"] == got["writable_bytes"]);
  BOOST_TEST(state["limits.memory_mib"] == got["limits"]["memory_mib"]);
  if (!got["pause_mode"].is_null())
    BOOST_TEST(state["pause_mode"] == got["pause_mode"]);
  BOOST_TEST(state["timeouts.idle_seconds"] == got["idle_timeout_seconds"]);
}

struct recorded {
  std::string id;
  std::string copy; // the copied data directory (its log/)
  std::vector<json> gets;
  std::vector<json> through_daemon; // replay --json through the daemon, before the delete
  temp_dir dir{"replay-copy"};
};

// Runs the session and copies the stopped daemon's log.
void record(recorded& r) {
  temp_dir clock_dir("replay-clock");
  const std::string clock = clock_dir / "clock";
  set_clock(clock, k_t0);
  daemon_process d({"--runtime", "hollow", "--test-clock-file", clock});
  auto get = [&] {
    // The state the live system answers once the step's events are applied.
    json g = json::parse(ctl_ok(d, {"--json", "get", r.id}));
    r.gets.push_back(g);
  };
  r.id = create(d, {"--memory", "768", "--label", "case=replay"});
  get();
  set_clock(clock, k_t0 + 10 * k_minute_ns);
  ctl_ok(d, {"set-timeout", r.id, "--idle-timeout", "20m"});
  get();
  set_clock(clock, k_t0 + 20 * k_minute_ns);
  ctl_ok(d, {"pause", r.id, "--mode", "memory"});
  get();
  set_clock(clock, k_t0 + 30 * k_minute_ns);
  ctl_ok(d, {"resume", r.id});
  get();
  set_clock(clock, k_t0 + 40 * k_minute_ns);
  ctl_ok(d, {"pause", r.id});
  get();
  // While the daemon holds the log, replay reads it too (no lock taken).
  auto live = replay_lines({"--json", "replay", r.id, "--data-dir", d.data()});
  BOOST_TEST(live.back()["state"]["status"] == "paused");
  // Through the daemon (admin scope), which reads its own log.
  r.through_daemon = ctl(d, {"--json", "replay", r.id}).lines();
  BOOST_TEST(r.through_daemon == live);
  set_clock(clock, k_t0 + 50 * k_minute_ns);
  ctl_ok(d, {"delete", r.id});
  BOOST_REQUIRE_EQUAL(d.stop(), 0);
  r.copy = r.dir / "node";
  std::filesystem::create_directories(r.copy);
  std::filesystem::copy(d.data() + "/log", r.copy + "/log",
                        std::filesystem::copy_options::recursive);
}

} // namespace

BOOST_AUTO_TEST_CASE(replay_of_a_copied_data_directory_shows_what_get_answered,
                     *utf::precondition(postgres_installed)) {
  recorded r;
  record(r);
  const auto before = dir_fingerprint(r.copy);

  const auto steps = replay_lines({"--json", "replay", r.id, "--data-dir", r.copy});
  BOOST_REQUIRE(!steps.empty());
  std::map<std::uint64_t, json> by_seq;
  std::uint64_t expect = 1;
  for (const auto& s : steps) {
    BOOST_TEST(s["event"]["sequence"] == expect); // dense, in order
    ++expect;
    BOOST_TEST(s["state"]["sequence"] == s["event"]["sequence"]);
    by_seq[s["event"]["sequence"].get<std::uint64_t>()] = s["state"];
  }
  BOOST_TEST(steps.back()["state"]["status"] == "deleted");
  for (const auto& g : r.gets) {
    const auto seq = g["sequence"].get<std::uint64_t>();
    BOOST_REQUIRE_MESSAGE(by_seq.count(seq), "no replayed state at sequence " << seq);
    check_state_matches_get(by_seq[seq], g);
  }

  // --until-seq: the same states, cut at the sequence get answered after the first pause.
  const auto paused_seq = r.gets[2]["sequence"].get<std::uint64_t>();
  auto until = replay_lines(
    {"--json", "replay", r.id, "--data-dir", r.copy, "--until-seq", std::to_string(paused_seq)});
  BOOST_REQUIRE_EQUAL(until.size(), paused_seq);
  check_state_matches_get(until.back()["state"], r.gets[2]);

  // --at: at 00:25 the sandbox was paused in memory (paused at 00:20, resumed at 00:30); at
  // 00:15 running with the 20 min idle timeout set at 00:10, so idle at 00:30.
  auto at =
    replay_lines({"--json", "replay", r.id, "--data-dir", r.copy, "--at", "2026-01-01T00:25:00Z"});
  check_state_matches_get(at.back()["state"], r.gets[2]);
  BOOST_TEST(at.back()["state"]["pause_mode"] == "memory");
  at =
    replay_lines({"--json", "replay", r.id, "--data-dir", r.copy, "--at", "2026-01-01T00:15:00Z"});
  check_state_matches_get(at.back()["state"], r.gets[1]);
  BOOST_TEST(at.back()["state"]["deadline.idle"] == "2026-01-01T00:30:00Z");

  // Text: one event line and one state line per event.
  auto text = offline({"replay", r.id, "--data-dir", r.copy});
  BOOST_REQUIRE_EQUAL(text.exit_code, 0);
  BOOST_TEST(text.out.find("  => status=creating sequence=1 ") != std::string::npos, text.out);
  BOOST_TEST(text.out.find("label.case=replay") != std::string::npos);

  // diff: what the first pause changed (between set-timeout and paused).
  auto diff = offline({"--json", "diff", r.id, "--data-dir", r.copy, "--from-seq",
                       r.gets[1]["sequence"].dump(), "--to-seq", std::to_string(paused_seq)});
  BOOST_REQUIRE_MESSAGE(diff.exit_code == 0, diff);
  const json doc = diff.doc();
  std::map<std::string, json> changes;
  for (const auto& c : doc["changes"])
    changes[c["field"].get<std::string>()] = c;
  BOOST_TEST(changes["status"]["before"] == "running");
  BOOST_TEST(changes["status"]["after"] == "paused");
  BOOST_TEST(changes["pause_mode"]["after"] == "memory");
  BOOST_TEST(!changes["deadline.idle"]["before"].is_null()); // the idle timer stopped
  BOOST_TEST(changes["deadline.idle"]["after"].is_null());
  BOOST_TEST(changes.count("limits.memory_mib") == 0u);
  const auto& between = doc["events"];
  BOOST_REQUIRE(!between.empty());
  BOOST_TEST(between.front()["kind"] == "pause_requested");
  BOOST_TEST(between.front()["payload"]["mode"] == "memory");

  // The daemon's answer before the delete is the prefix of the offline replay.
  BOOST_REQUIRE(!r.through_daemon.empty());
  BOOST_REQUIRE_LT(r.through_daemon.size(), steps.size());
  for (std::size_t i = 0; i < r.through_daemon.size(); ++i)
    BOOST_TEST(r.through_daemon[i] == steps[i]);

  // An unknown id is not_found (exit 201); points out of order are a usage error.
  auto none = offline({"replay", "sb-nothere", "--data-dir", r.copy});
  BOOST_TEST(none.exit_code == 201, none);
  BOOST_TEST(
    offline({"diff", r.id, "--data-dir", r.copy, "--from-seq", "3", "--to-seq", "2"}).exit_code ==
    200);

  BOOST_TEST(dir_fingerprint(r.copy) == before);

  // The same log on a Kafka topic: the records of every partition copied in order, so each
  // keeps its partition (murmur2 of the key) and offset; replay from the broker prints the
  // same lines.
  events::file_log_reader reader(r.copy + "/log");
  const std::string topic = "replay-" + std::to_string(::getpid()) + "-" + r.id;
  {
    events::kafka_log kafka(
      single_broker_log(shared_kafka_bootstrap(), topic, reader.partitions()));
    for (std::int32_t p = 0; p < reader.partitions(); ++p) {
      auto records = reader.read(p, 0, 1'000'000).records;
      std::vector<events::log_record> batch;
      for (auto& rec : records)
        batch.push_back({rec.key, rec.value});
      if (!batch.empty())
        BOOST_REQUIRE(kafka.append(std::move(batch)).get().ok());
    }
  }
  auto from_kafka =
    offline({"--json", "replay", r.id, "--brokers", shared_kafka_bootstrap(), "--topic", topic,
             "--partitions", std::to_string(reader.partitions())});
  BOOST_REQUIRE_MESSAGE(from_kafka.exit_code == 0, from_kafka);
  BOOST_TEST(from_kafka.out == offline({"--json", "replay", r.id, "--data-dir", r.copy}).out);
}

// projections verify (admin scope) on a daemon: no difference after a session; after a row
// of the `sandboxes` read model is edited by hand in SQL, exactly that row, on both sides
// (the edited row only live, the row the log makes only in the rebuild), with its events.
BOOST_AUTO_TEST_CASE(projections_verify_finds_exactly_the_rows_edited_by_hand,
                     *utf::precondition(postgres_installed)) {
  daemon_process d({"--runtime", "hollow"});
  const auto a = create(d, {"--memory", "512"});
  const auto b = create(d, {"--memory", "1024"});
  ctl_ok(d, {"pause", a});
  ctl_ok(d, {"delete", b});

  json check;
  BOOST_TEST(eventually([&] {
    auto r = ctl(d, {"--json", "projections", "verify"});
    check = r.doc();
    return r.exit_code == 0 && check["rows_compared"].get<std::uint64_t>() > 0;
  }));
  BOOST_TEST(check["equal"] == true);
  BOOST_TEST(check["differences"].empty());

  {
    pqxx::connection c(d.pg_conninfo());
    pqxx::work tx(c);
    BOOST_REQUIRE_EQUAL(
      tx.exec_params("UPDATE sandboxes SET writable_layer_bytes = 4242 WHERE id = $1", a)
        .affected_rows(),
      1);
    tx.commit();
  }
  auto r = ctl(d, {"--json", "projections", "verify", "read_models"});
  BOOST_TEST(r.exit_code == 1, r);
  check = r.doc();
  BOOST_TEST(check["equal"] == false);
  const auto& diffs = check["differences"];
  BOOST_REQUIRE_EQUAL(diffs.size(), 2u);
  std::set<std::string> sides;
  for (const auto& diff : diffs) {
    BOOST_TEST(diff["table"] == "sandboxes");
    BOOST_TEST(diff["row"]["id"] == a);
    sides.insert(diff["side"].get<std::string>());
    BOOST_TEST((diff["side"] == "live") == (diff["row"]["writable_layer_bytes"] == 4242));
    BOOST_REQUIRE(!diff["events"].empty());
    BOOST_TEST(diff["events"][0] == a + ":1");
  }
  BOOST_TEST((sides == std::set<std::string>{"live", "rebuild"}));
  auto text = ctl(d, {"projections", "verify"});
  BOOST_TEST(text.exit_code == 1);
  BOOST_TEST(text.out.find("2 differing") != std::string::npos, text.out);
  BOOST_TEST(ctl(d, {"projections", "verify", "nothing"}).exit_code == 201);
}
