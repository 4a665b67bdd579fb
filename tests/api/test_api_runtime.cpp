// A sandbox's lifecycle over RPC on the real runtimes (crun, runsc): create, get, pause
// (filesystem and memory), resume, delete, through the C++ client, and nothing left in the
// runtime afterwards. Skipped (with the reason) where a runtime cannot run sandboxes.
#define BOOST_TEST_MODULE api_runtime
#include <boost/test/unit_test.hpp>

#include "tests/api/runtime_world.hpp"

#include <fstream>
#include <optional>

using namespace sandboxd;
using sandboxd::test::rpc_world;
using sandboxd::test::runs;
namespace utf = boost::unit_test;

namespace {

void lifecycle(runtime::oci_runtime kind, events::runtime_kind as) {
  rpc_world w(kind, as);
  auto& driver = w.driver;
  auto c = std::optional<api::client>(w.connect());
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

// A tenant's names reach the runtime only as the sandbox's own: a template name that walks
// out of the templates directory is refused with nothing made, and a path that climbs out
// of the sandbox's root reads the sandbox's file, never the host's.
void hostile_names(runtime::oci_runtime kind, events::runtime_kind as) {
  rpc_world w(kind, as);
  auto c = w.connect();
  for (const char* name : {"../../../../../../../../proc/self/root", "/", "..", "base/../..",
                           "base/../../../../etc"}) {
    api::create_options o;
    o.template_name = name;
    auto r = c.create(o);
    BOOST_TEST_CONTEXT("template " << name) {
      BOOST_REQUIRE_MESSAGE(!r.ok(), "created: state " << (r.ok() ? r->state : ""));
      const auto code = api::to_string(r.code());
      BOOST_TEST((code == "invalid_argument" || code == "not_found"), code);
    }
  }
  auto left = w.driver.list();
  BOOST_REQUIRE(left.ok());
  BOOST_TEST(left->empty());

  auto sb = c.create({});
  BOOST_REQUIRE_MESSAGE(sb.ok(), (sb ? "" : sb.err().message));
  std::string host_shadow;
  {
    std::ifstream in("/etc/shadow");
    std::getline(in, host_shadow, '\0');
  }
  for (const char* path : {"/../../../../../../etc/shadow", "/etc/../../../etc/shadow"}) {
    std::string got;
    auto r = c.read_file(sb->id, path, [&](std::string_view d) { got.append(d); });
    BOOST_TEST_CONTEXT("read " << path) {
      if (r.ok())
        BOOST_TEST((host_shadow.empty() || got != host_shadow));
      else
        BOOST_TEST((api::to_string(r.code()) != "internal"), r.err().message);
    }
  }
  // A symlink the sandbox plants to the host's / is followed inside the sandbox's root.
  api::exec_options e;
  e.argv = {"ln", "-s", "/", "/workspace/up"};
  auto ln = c.exec(sb->id, e, {});
  BOOST_REQUIRE_MESSAGE(ln.ok(), (ln ? "" : ln.err().message));
  BOOST_REQUIRE(ln->exit_code == 0);
  std::string through;
  auto r =
    c.read_file(sb->id, "/workspace/up/etc/shadow", [&](std::string_view d) { through.append(d); });
  if (r.ok())
    BOOST_TEST((host_shadow.empty() || through != host_shadow));
  BOOST_REQUIRE(c.remove(sb->id).ok());
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_runtime)

BOOST_AUTO_TEST_CASE(hostile_names_over_rpc_on_crun, *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::crun);
                     })) {
  hostile_names(runtime::oci_runtime::crun, events::runtime_kind::crun);
}

BOOST_AUTO_TEST_CASE(hostile_names_over_rpc_on_runsc, *utf::precondition([](utf::test_unit_id) {
                       return runs(runtime::oci_runtime::runsc);
                     })) {
  hostile_names(runtime::oci_runtime::runsc, events::runtime_kind::runsc);
}

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
