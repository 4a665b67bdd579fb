// actor_world.hpp — one node's actor system for a test: the embedded file log on disk behind
// a faulty_log, the hollow driver behind a recording_driver, a manual clock, and restarts.
#pragma once

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

} // namespace sandboxd::test
