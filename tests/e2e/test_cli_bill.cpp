// The published billing example (docs/billing.md: 4 GiB running 10 h, its 20 GiB writable
// layer kept 730 h from creation through a pause to deletion: $0.60 + $0.40 = $1.00)
// reproduced end to end: a sandboxd whose clock is a
// file the test writes (--test-clock-file, docs/operations.md) on the hollow runtime, driven by
// sandboxctl as a user would; `sandboxctl bill` prints the bill, and each of its lines is traced
// to the events it names with `sandboxctl events`.
//
// The layer: the hollow runtime measures a sandbox's layer as the bytes of the files in its
// directory (docs/runtime.md), so a sparse 20 GiB file planted there is a 20 GiB layer that
// costs no disk.
#define BOOST_TEST_MODULE cli_bill
#include "tests/e2e/e2e_support.hpp"

#include "tests/projections/postgres_installed.hpp"

using namespace sandboxd::test;

namespace {

constexpr std::int64_t k_hour_ns = 3'600'000'000'000;
constexpr std::int64_t k_t0 = 1'767'225'600'000'000'000; // 2026-01-01T00:00:00Z
constexpr std::uint64_t k_gib = 1ull << 30;

// The clock file: written beside and renamed, so the daemon never reads half a number.
void set_clock(const std::string& path, std::int64_t ns) {
  {
    std::ofstream f(path + ".next");
    f << ns << "\n";
  }
  std::filesystem::rename(path + ".next", path);
}

} // namespace

BOOST_AUTO_TEST_CASE(bill_reproduces_the_published_example_and_each_line_traces_to_its_events,
                     *utf::precondition(postgres_installed)) {
  temp_dir clock_dir("cli-clock");
  const std::string clock = clock_dir / "clock";
  set_clock(clock, k_t0);
  daemon_process d({"--runtime", "hollow", "--test-clock-file", clock});

  // 4 GiB of memory, created and started at T0.
  const auto id = create(d, {"--memory", "4096", "--label", "example=published"});
  auto got = json::parse(ctl_ok(d, {"--json", "get", id}));
  BOOST_TEST(got["created_at"] == "2026-01-01T00:00:00Z");
  BOOST_TEST(got["runtime"] == "hollow");

  // Its writable layer holds 20 GiB.
  const std::string upper = d.data() + "/runtimes/hollow/sandboxes/" + id + "/upper";
  std::filesystem::create_directories(upper);
  BOOST_REQUIRE_EQUAL(::truncate((upper + "/layer.img").c_str(), 0), -1); // not there yet
  { std::ofstream(upper + "/layer.img").close(); }
  BOOST_REQUIRE_EQUAL(::truncate((upper + "/layer.img").c_str(), 20 * k_gib), 0);

  // Running for 10 hours, then paused (filesystem: the layer is kept) for 720 hours, deleted.
  set_clock(clock, k_t0 + 10 * k_hour_ns);
  BOOST_TEST(ctl_ok(d, {"pause", id}) == id + " paused (filesystem)\n");
  set_clock(clock, k_t0 + 730 * k_hour_ns);
  ctl_ok(d, {"delete", id});

  // The bill of January (whole hours), once the projector has the deletion.
  json bill;
  BOOST_TEST(eventually([&] {
    bill = json::parse(ctl_ok(d, {"--json", "bill", "--from", "2026-01-01", "--to", "2026-02-01"}));
    return bill["total_micros"] == 1'000'000;
  }));
  BOOST_TEST(bill["total_usd"] == "1.000000");
  BOOST_REQUIRE_EQUAL(bill["lines"].size(), 1u);
  const auto& line = bill["lines"][0];
  BOOST_TEST(line["sandbox_id"] == id);
  BOOST_TEST(line["compute_micros"] == 600'000);
  BOOST_TEST(line["storage_micros"] == 400'000);
  BOOST_TEST(line["compute_gib_seconds"].get<double>() == 4.0 * 10 * 3600);
  BOOST_TEST(line["storage_gib_seconds"].get<double>() == 20.0 * 730 * 3600);

  // As people read it: the line and the total, to the micro-dollar.
  const auto text = ctl_ok(d, {"bill", "--from", "2026-01-01", "--to", "2026-02-01"});
  BOOST_TEST(
    text.find(id + "  40.000000      20.000000          $0.600000  $0.400000  $1.000000") !=
      std::string::npos,
    text);
  BOOST_TEST(text.find("\ntotal ") != std::string::npos);
  BOOST_TEST(text.find("$0.600000  $0.400000  $1.000000\n") != std::string::npos, text);

  // Each event the line names ("<sandbox>:<sequence>") is in `sandboxctl events`, and they
  // explain the line: compute opened by `started` at T0 and closed by `pause_requested` 10 h
  // later (4 GiB x 10 h); storage from `created` at T0 to `deleted` at T0 + 730 h, every
  // reading between them 20 GiB.
  std::map<std::uint64_t, json> by_sequence;
  for (const auto& e : ctl(d, {"--json", "events", id}).lines())
    by_sequence[e["sequence"].get<std::uint64_t>()] = e;
  BOOST_REQUIRE(!by_sequence.empty());
  std::vector<json> traced;
  for (const auto& ref : line["events"]) {
    const std::string s = ref;
    BOOST_REQUIRE_EQUAL(s.substr(0, id.size() + 1), id + ":");
    const auto seq = std::stoull(s.substr(id.size() + 1));
    BOOST_REQUIRE_MESSAGE(by_sequence.count(seq), s << " is not among the sandbox's events");
    traced.push_back(by_sequence[seq]);
  }
  auto at = [](const json& e) { return e["time"].get<std::string>(); };
  auto of_kind = [&](const std::string& kind) {
    std::vector<json> v;
    for (const auto& e : traced)
      if (e["kind"] == kind)
        v.push_back(e);
    return v;
  };
  const auto started = of_kind("started");
  const auto pause = of_kind("pause_requested");
  BOOST_REQUIRE_EQUAL(started.size(), 1u);
  BOOST_REQUIRE_EQUAL(pause.size(), 1u);
  BOOST_TEST(at(started[0]) == "2026-01-01T00:00:00Z");
  BOOST_TEST(at(pause[0]) == "2026-01-01T10:00:00Z");
  // Storage intervals open at `created` or at an event that measured the layer
  // (storage_sampled, paused) and close at the next one or at `deleted` (docs/billing.md).
  std::vector<std::string> storage_times;
  for (const auto& e : traced) {
    if (e["payload"].contains("writable_bytes"))
      BOOST_TEST(e["payload"]["writable_bytes"] == 20 * k_gib, e.dump());
    else if (e["kind"] != "deleted" && e["kind"] != "created")
      continue;
    storage_times.push_back(at(e));
  }
  BOOST_REQUIRE_MESSAGE(storage_times.size() >= 2u, "the line's events: " << line["events"]);
  std::sort(storage_times.begin(), storage_times.end());
  BOOST_TEST(storage_times.front() == "2026-01-01T00:00:00Z");
  BOOST_TEST(storage_times.back() == "2026-01-31T10:00:00Z"); // T0 + 730 h
  // And the text lines of `events` carry the same: time, sequence, kind, essentials.
  const auto lines = ctl_ok(d, {"events", id});
  BOOST_TEST(lines.find("2026-01-01T10:00:00.000Z  " + id + "  " +
                        std::to_string(pause[0]["sequence"].get<int>()) +
                        "  pause_requested  dev  mode=filesystem reason=user") != std::string::npos,
             lines);
  BOOST_TEST(lines.find("writable_bytes=21474836480") != std::string::npos);
}
