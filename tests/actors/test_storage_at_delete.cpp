// The layer's last reading, through the actors on a real runtime: a sandbox that wrote 32 MiB
// and is deleted logs a `deleted` whose layer figure is at least those 32 MiB — measured by the
// delete step just before the runtime removed the layer (actors/runtime_steps.cpp), with no
// storage sample taken meanwhile (the sample interval is off) — and the billing meter closes
// its storage on that figure (docs/billing.md, "Meters"). Built once and run once per driver;
// a runtime that cannot run here is skipped with the reason.
#define BOOST_TEST_MODULE storage_at_delete
#include "tests/runtime/driver_fixture.hpp"

#include "projections/billing_meter.hpp"
#include "tests/actors/actor_harness.hpp"

using namespace std::chrono_literals;
using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::test::driver_usable;

namespace {

constexpr std::uint64_t mib = std::uint64_t{1} << 20;

bool has_event(const sandbox_history& h, std::string_view type) {
  for (const auto& e : h.events)
    if (ev::type_name(e.body) == type)
      return true;
  return false;
}

// The actors over the fixture's driver, with the embedded file log in its directory.
struct plane_fixture : driver_fixture {
  manual_clock clock;
  ev::file_log file{ev::file_log_options{dir / "log", 4}};
  faulty_log log{file};
  std::unique_ptr<ac::control_plane> plane;

  plane_fixture() {
    ac::control_plane_options o;
    o.log = &log;
    o.driver = d.get();
    o.data_dir = dir / "plane";
    o.clock = clock.fn();
    o.timer_poll = 2ms;
    o.runtime_threads = 2;
    o.passivate_after = 60s;
    o.storage_sample_interval = ev::nanoseconds(0); // no samples: only the delete measures
    o.snapshot_every_records = 0;
    plane = std::make_unique<ac::control_plane>(o);
  }
  ~plane_fixture() { plane.reset(); }

  // Writes `bytes` into the sandbox's layer: from a process inside it where the runtime runs
  // processes, else (hollow) through the driver.
  void write_layer(const std::string& id, std::uint64_t bytes) {
    if (!driver_under_test::runs_processes) {
      auto w = d->write_file(id, "/workspace/data", std::string(bytes, 'x'));
      BOOST_TEST_REQUIRE(w.ok(), (w ? "" : w.err().message));
      return;
    }
    runtime::exec_request r;
    r.argv = {"/bin/sh", "-c",
              "mkdir -p /workspace && head -c " + std::to_string(bytes) +
                " /dev/urandom > /workspace/data && ls -l /workspace/data"};
    r.timeout = 60s;
    auto x = d->exec(id, r);
    BOOST_TEST_REQUIRE(x.ok(), (x ? "" : x.err().message));
    BOOST_TEST_REQUIRE(x->exit_code == 0, x->stderr_data);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(storage_at_delete, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(a_deleted_sandbox_logs_the_layer_it_wrote, plane_fixture) {
  auto s = spec();
  s.limits.disk_mib = 256;
  auto made = plane->call("", user(ac::cmd::create{s}));
  BOOST_REQUIRE_MESSAGE(made.ok(), (made.failure ? made.failure->message : std::string()));
  const auto id = made.state.sandbox_id;
  BOOST_REQUIRE(made.state.status == ac::sandbox_status::running);

  write_layer(id, 32 * mib);
  clock.advance(5min);
  auto gone = plane->call(id, user(ac::cmd::remove{}));
  BOOST_REQUIRE_MESSAGE(gone.ok(), (gone.failure ? gone.failure->message : std::string()));
  BOOST_REQUIRE(eventually([&] { return has_event(history_of(log, id), "deleted"); }));

  const auto h = history_of(log, id);
  BOOST_REQUIRE_MESSAGE(h.problem.empty(), h.problem);
  BOOST_TEST(!has_event(h, "storage_sampled"),
             "a sample was taken; the delete's figure is untested");
  const ev::deleted* del = nullptr;
  for (const auto& e : h.events)
    if (const auto* x = std::get_if<ev::deleted>(&e.body))
      del = x;
  BOOST_REQUIRE(del != nullptr);
  BOOST_TEST_MESSAGE("deleted measured " << del->writable_layer_bytes << " bytes");
  BOOST_TEST(del->writable_layer_bytes >= 32 * mib, "deleted measured "
                                                      << del->writable_layer_bytes
                                                      << " bytes, below the 32 MiB written");

  // The storage meter on that history: one interval, created → deleted, at the delete's figure.
  std::optional<projections::meter_state> m;
  std::vector<projections::closed_interval> closed;
  for (const auto& e : h.events)
    projections::meter_event(m, e, closed);
  std::vector<projections::closed_interval> storage;
  for (const auto& c : closed)
    if (c.kind == projections::meter::storage)
      storage.push_back(c);
  BOOST_REQUIRE_EQUAL(storage.size(), 1u);
  BOOST_TEST(storage[0].bytes == static_cast<std::int64_t>(del->writable_layer_bytes));
  BOOST_TEST(storage[0].end_ms - storage[0].start_ms >= 5 * 60'000);
}

BOOST_AUTO_TEST_SUITE_END()
