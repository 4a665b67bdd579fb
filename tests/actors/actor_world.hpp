// actor_world.hpp — one node's actor system for a test: the embedded file log on disk behind
// a faulty_log, the hollow driver behind a recording_driver, a manual clock, and restarts;
// and after_due_timers, which tells without sleeping that a timer has not fired early.
#pragma once

#include <boost/algorithm/string/join.hpp>
#include <boost/test/unit_test.hpp>

#include "tests/actors/actor_harness.hpp"
#include "tests/support/temp_dir.hpp"

#include <memory>
#include <string>

namespace sandboxd::test {

struct world {
  temp_dir dir{"actors"};
  manual_clock clock;
  std::unique_ptr<ev::file_log> file;
  std::unique_ptr<faulty_log> log;
  runtime::hollow_driver hollow{runtime::hollow_options{dir / "runtime", {}}};
  recording_driver driver{hollow};
  ac::control_plane_options options;
  std::unique_ptr<ac::control_plane> plane;

  world() {
    open_log();
    options.log = log.get();
    options.driver = &driver;
    options.data_dir = dir / "data";
    options.clock = clock.fn();
    options.timer_poll = 2ms;
    options.runtime_threads = 4;
    options.passivate_after = 60s;
    options.storage_sample_interval = ev::nanoseconds(0);
    options.snapshot_every_records = 0;
  }
  void open_log() {
    file = std::make_unique<ev::file_log>(ev::file_log_options{dir / "log", 4});
    log = std::make_unique<faulty_log>(*file);
  }
  ac::control_plane& start() {
    plane = std::make_unique<ac::control_plane>(options);
    return *plane;
  }
  void stop() { plane.reset(); }
  // A restart of the whole process: the log is closed and reopened too.
  ac::control_plane& restart() {
    stop();
    log.reset();
    file.reset();
    open_log();
    options.log = log.get();
    return start();
  }
  std::string create(ev::created s = spec()) {
    auto r = plane->call("", user(ac::cmd::create{std::move(s)}));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.failure ? r.failure->message : std::string()));
    return r.state.sandbox_id;
  }
  ac::sandbox_status status(const std::string& id) {
    auto r = plane->get(id, "acme");
    return r.ok() ? r.state.status : ac::sandbox_status::absent;
  }
};

// Whether `h` holds an event of type `type`.
inline bool holds(const sandbox_history& h, const std::string& type) {
  for (const auto& e : h.events)
    if (ev::type_name(e.body) == type)
      return true;
  return false;
}

// After the manual clock was advanced: waits until `probe`'s timer, due at the new time, has
// been recorded (its delete_requested is in the log), then sends `target` a command that is
// rejected (and recorded) and returns the types of target's events up to that rejection.
// A firing for `target` with an earlier deadline left the timer queue before the probe's,
// went through the directory before the rejected command did, and was decided before it:
// if the target's timer fired early, its event is in the list. No sleeping, no guessing.
inline std::vector<std::string> after_due_timers(world& w, const std::string& probe,
                                                 const std::string& target,
                                                 ac::command_body rejected) {
  BOOST_REQUIRE(eventually([&] { return holds(history_of(*w.log, probe), "delete_requested"); }));
  auto r = w.plane->call(target, user(std::move(rejected)), ac::reply_when::durable);
  auto types = type_names(history_of(*w.log, target).events);
  BOOST_REQUIRE_MESSAGE(!r.ok(), "the command meant to be rejected was accepted (did "
                                   << target << "'s timer fire early?); its events: "
                                   << boost::algorithm::join(types, ", "));
  BOOST_REQUIRE(r.failure->code == ev::errc::conflict);
  BOOST_REQUIRE(!types.empty());
  BOOST_TEST(types.back() == "command_rejected");
  return types;
}

// A sandbox with this timeout policy whose timer is the probe of after_due_timers.
inline ev::created probe_spec(ev::sandbox_timeouts t) {
  auto s = spec();
  s.timeouts = t;
  s.timeouts.on_idle = ev::idle_action::delete_sandbox;
  return s;
}

} // namespace sandboxd::test
