// runtime_world — an in-process sandboxd on one real runtime (crun or runsc) for the RPC
// runtime suites: the file log, the OCI driver, the control plane (with warm pools when
// asked for) and the RPC server on a unix socket, one token of tenant "t"; and the
// precondition that skips a suite where the runtime cannot run sandboxes.
#pragma once

#include "actors/control_plane.hpp"
#include "api/client.hpp"
#include "api/server.hpp"
#include "api/token_authenticator.hpp"
#include "events/file_log.hpp"
#include "runtime/oci_driver.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

namespace sandboxd::test {

inline boost::test_tools::assertion_result runs(runtime::oci_runtime kind) {
  if (auto why = runtime::oci_unavailable(kind)) {
    boost::test_tools::assertion_result r(false);
    r.message() << "cannot run sandboxes here: " << *why;
    return r;
  }
  return true;
}

// Removes every sandbox the driver still holds once the control plane is gone (a case that
// stopped on a failed requirement left its sandboxes, and a pool its ready ones): nothing of a
// world outlives it, whatever the case did.
struct driver_sweeper {
  runtime::oci_driver& driver;
  ~driver_sweeper() {
    if (auto left = driver.list(); left.ok())
      for (const auto& sb : left.value())
        driver.remove(sb.id);
    driver.drain_removals();
  }
};

// A control plane on one real runtime and an RPC server in front of it.
struct rpc_world {
  rpc_world(runtime::oci_runtime kind, events::runtime_kind as,
            std::vector<actors::pool_settings> pools = {})
      : log(events::file_log_options{dir / "log", 2}),
        driver(driver_options(kind, dir)), sweeper{driver},
        plane(plane_options(log, driver, dir, std::move(pools))),
        server(server_options(plane, log, tokens, as, dir)) {}

  static runtime::oci_options driver_options(runtime::oci_runtime kind, const temp_dir& d) {
    runtime::oci_options oo;
    oo.runtime = kind;
    oo.data_dir = d / "runtime";
    return oo;
  }
  static actors::control_plane_options plane_options(events::event_log& log,
                                                     runtime::driver& driver, const temp_dir& d,
                                                     std::vector<actors::pool_settings> pools) {
    actors::control_plane_options po;
    po.log = &log;
    po.driver = &driver;
    po.data_dir = d / "data";
    po.snapshot_every_records = 0;
    po.pools = std::move(pools);
    return po;
  }
  static api::server_options server_options(actors::control_plane& plane, events::event_log& log,
                                            api::token_authenticator& tokens,
                                            events::runtime_kind as, const temp_dir& d) {
    tokens.add("rt-token", {"t", "p", {"sandboxes"}});
    api::server_options so;
    so.listen = {"unix:" + (d / "api.sock")};
    so.plane = &plane;
    so.log = &log;
    so.auth = &tokens;
    so.defaults.runtime = as;
    so.defaults.runtimes = {as};
    return so;
  }
  api::client connect() {
    auto c = api::client::connect({"unix:" + (dir / "api.sock"), "rt-token"});
    BOOST_REQUIRE(c.ok());
    return std::move(c).value();
  }

  temp_dir dir{"api-runtime"};
  events::file_log log;
  runtime::oci_driver driver;
  driver_sweeper sweeper; // after the plane is gone, before the driver
  actors::control_plane plane;
  api::token_authenticator tokens;
  api::server server;
};

} // namespace sandboxd::test
