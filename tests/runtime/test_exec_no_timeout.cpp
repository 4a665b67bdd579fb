// An exec without a timeout runs as long as its program does: `sleep 90` (longer than any
// default a driver could hide) ends by itself with exit 0. Long (90 s): its own binary,
// labelled `long`, built once per driver.
#define BOOST_TEST_MODULE exec_no_timeout
#include <boost/test/unit_test.hpp>

#include "tests/runtime/driver_fixture.hpp"

using namespace sandboxd::runtime;
using sandboxd::test::driver_fixture;
using sandboxd::test::driver_usable;

BOOST_AUTO_TEST_SUITE(exec_no_timeout, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(an_exec_without_timeout_runs_90_seconds_to_its_end, driver_fixture) {
  running("long");
  exec_request r;
  r.argv = {"sleep", "90"};
  BOOST_TEST(r.timeout.count() == 0); // the default: none
  auto res = d->exec("long", r);
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST(!res->timed_out);
  BOOST_TEST(res->signal == 0);
  BOOST_TEST(res->exit_code == 0, res->stderr_data);
  BOOST_TEST(res->duration >= std::chrono::seconds(90));
}

BOOST_AUTO_TEST_SUITE_END()
