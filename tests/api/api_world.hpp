// api_world — an in-process sandboxd for the RPC tests: the embedded file log, the hollow
// driver, the real control plane, a projector into a private PostgreSQL schema, and the RPC
// server on a unix socket, with three tokens: tenant "a" with the admin scope, tenant "a"
// without it, tenant "b".
#pragma once

#include "actors/control_plane.hpp"
#include "api/client.hpp"
#include "api/server.hpp"
#include "api/token_authenticator.hpp"
#include "events/file_log.hpp"
#include "projections/projector.hpp"
#include "runtime/hollow_driver.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <thread>

namespace sandboxd::test {

inline constexpr const char* k_token_admin = "tok-a-admin-5d1f";
inline constexpr const char* k_token_a = "tok-a-user-77c2";
inline constexpr const char* k_token_b = "tok-b-user-0e9a";

class manual_time {
public:
  events::time_point now() const { return events::time_point(events::nanoseconds(ns_.load())); }
  void advance(events::nanoseconds d) { ns_ += d.count(); }

private:
  // 2027-01-15 08:00:00 UTC: a whole hour, so billing periods are easy to name.
  std::atomic<std::int64_t> ns_{std::int64_t{1'800'000'000 - 1'800'000'000 % 3600} * 1'000'000'000};
};

struct world_options {
  bool read_models = true;   // PostgreSQL and a projector
  bool manual_clock = false; // the control plane's clock: manual_time
  std::function<void(api::server_options&)> tune;
  std::function<void(actors::control_plane_options&)> tune_plane;
};

inline world_options without_read_models(std::function<void(api::server_options&)> tune = {}) {
  world_options o;
  o.read_models = false;
  o.tune = std::move(tune);
  return o;
}

inline world_options with_manual_clock() {
  world_options o;
  o.manual_clock = true;
  return o;
}

struct api_world {
  temp_dir dir{"api"};
  manual_time clock;
  events::file_log log{events::file_log_options{dir / "log", 4}};
  runtime::hollow_driver driver{runtime::hollow_options{dir / "runtime", {}}};
  std::unique_ptr<actors::control_plane> plane;
  std::string schema;
  std::unique_ptr<projections::projector> projector;
  api::token_authenticator tokens;
  std::unique_ptr<api::server> server;
  std::string address;

  explicit api_world(world_options o = {}) {
    actors::control_plane_options po;
    po.log = &log;
    po.driver = &driver;
    po.data_dir = dir / "data";
    po.runtime_threads = 2;
    po.snapshot_every_records = 0;
    po.storage_sample_interval = events::nanoseconds(0);
    if (o.manual_clock) {
      po.clock = [this] { return clock.now(); };
      po.timer_poll = std::chrono::milliseconds(5);
    }
    if (o.tune_plane)
      o.tune_plane(po);
    plane = std::make_unique<actors::control_plane>(po);

    tokens.add(k_token_admin, {"a", "alice", {"sandboxes", "admin"}});
    tokens.add(k_token_a, {"a", "bob", {"sandboxes"}});
    tokens.add(k_token_b, {"b", "carol", {"sandboxes"}});

    api::server_options so;
    address = "unix:" + (dir / "api.sock");
    so.listen = {address};
    so.plane = plane.get();
    so.log = &log;
    so.auth = &tokens;
    so.defaults.runtime = events::runtime_kind::hollow;
    so.defaults.runtimes = {events::runtime_kind::hollow};
    if (o.read_models) {
      schema = "api_" + std::to_string(std::random_device{}());
      projections::projector_options pr;
      pr.schema = schema;
      pr.idle_wait = std::chrono::milliseconds(5);
      projector = std::make_unique<projections::projector>(log, pg_server::shared().conninfo(), pr);
      projector->start();
      so.pg_conninfo = pg_server::shared().conninfo();
      so.pg_schema = schema;
    }
    if (o.tune)
      o.tune(so);
    server = std::make_unique<api::server>(so);
  }

  ~api_world() {
    server.reset();
    if (projector)
      projector->stop();
    projector.reset();
    plane.reset();
  }

  api::client connect(const char* token = k_token_a) {
    auto c = api::client::connect({address, token});
    BOOST_REQUIRE_MESSAGE(c.ok(), (c ? std::string() : c.err().message));
    return std::move(*c);
  }

  // Waits until the projector has applied everything in the log (for list, bill, audit).
  void wait_for_projection() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      bool caught_up = projector->status().steps > 0; // its schema exists
      for (const auto& l : projector->lag())
        caught_up = caught_up && l.lag() == 0;
      if (caught_up)
        return;
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "the projector did not catch up within 20 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

// Polls `ok` until it holds (true) or `limit` passes (false).
inline bool eventually(const std::function<bool()>& ok,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ok()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

} // namespace sandboxd::test
