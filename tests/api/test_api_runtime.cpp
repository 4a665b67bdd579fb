// A sandbox's lifecycle over RPC on the real runtimes (crun, runsc): create, get, pause
// (filesystem and memory), resume, delete, through the C++ client, and nothing left in the
// runtime afterwards. Skipped (with the reason) where a runtime cannot run sandboxes.
#define BOOST_TEST_MODULE api_runtime
#include <boost/test/unit_test.hpp>

#include "actors/control_plane.hpp"
#include "api/client.hpp"
#include "api/server.hpp"
#include "api/token_authenticator.hpp"
#include "events/file_log.hpp"
#include "runtime/oci_driver.hpp"
#include "tests/support/temp_dir.hpp"

using namespace sandboxd;
namespace utf = boost::unit_test;

namespace {

boost::test_tools::assertion_result runs(runtime::oci_runtime kind) {
  if (auto why = runtime::oci_unavailable(kind)) {
    boost::test_tools::assertion_result r(false);
    r.message() << "cannot run sandboxes here: " << *why;
    return r;
  }
  return true;
}

void lifecycle(runtime::oci_runtime kind, events::runtime_kind as) {
  test::temp_dir dir("api-runtime");
  events::file_log log(events::file_log_options{dir / "log", 2});
  runtime::oci_options oo;
  oo.runtime = kind;
  oo.data_dir = dir / "runtime";
  runtime::oci_driver driver(oo);
  actors::control_plane_options po;
  po.log = &log;
  po.driver = &driver;
  po.data_dir = dir / "data";
  po.snapshot_every_records = 0;
  actors::control_plane plane(po);
  api::token_authenticator tokens;
  tokens.add("rt-token", {"t", "p", {"sandboxes"}});
  api::server_options so;
  so.listen = {"unix:" + (dir / "api.sock")};
  so.plane = &plane;
  so.log = &log;
  so.auth = &tokens;
  so.defaults.runtime = as;
  so.defaults.runtimes = {as};
  api::server server(so);

  auto c = api::client::connect({so.listen[0], "rt-token"});
  BOOST_REQUIRE(c.ok());
  auto sb = c->create({});
  BOOST_REQUIRE_MESSAGE(sb.ok(), (sb ? "" : sb.err().message));
  BOOST_TEST(sb->state == "running");
  BOOST_TEST(sb->runtime == events::to_string(as));
  auto in_runtime = driver.inspect(sb->id);
  BOOST_REQUIRE(in_runtime.ok());
  BOOST_TEST((in_runtime->status == runtime::sandbox_status::running));

  for (auto mode : {events::pause_mode::filesystem, events::pause_mode::memory}) {
    auto p = c->pause(sb->id, mode);
    BOOST_REQUIRE_MESSAGE(p.ok(), (p ? "" : p.err().message));
    BOOST_TEST(p->state == "paused");
    auto i = driver.inspect(sb->id);
    BOOST_REQUIRE(i.ok());
    BOOST_TEST((i->status == (mode == events::pause_mode::memory
                                ? runtime::sandbox_status::paused_memory
                                : runtime::sandbox_status::paused_filesystem)));
    auto r = c->resume(sb->id);
    BOOST_REQUIRE_MESSAGE(r.ok(), (r ? "" : r.err().message));
    BOOST_TEST(r->state == "running");
  }
  BOOST_REQUIRE(c->remove(sb->id).ok());
  auto gone = c->get(sb->id);
  BOOST_REQUIRE(!gone.ok());
  BOOST_TEST(api::to_string(gone.code()) == "not_found");
  auto left = driver.list();
  BOOST_REQUIRE(left.ok());
  BOOST_TEST(left->empty());
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_runtime)

BOOST_AUTO_TEST_CASE(lifecycle_over_rpc_on_crun, *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::crun);
                     })) {
  lifecycle(runtime::oci_runtime::crun, events::runtime_kind::crun);
}

BOOST_AUTO_TEST_CASE(lifecycle_over_rpc_on_runsc, *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::runsc);
                     })) {
  lifecycle(runtime::oci_runtime::runsc, events::runtime_kind::runsc);
}

BOOST_AUTO_TEST_SUITE_END()
