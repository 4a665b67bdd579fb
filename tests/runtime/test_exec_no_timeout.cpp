// An exec without a timeout runs as long as its program does: `sleep 90` (longer than any
// default a driver could hide) ends by itself with exit 0, on every driver. Long (90 s): its
// own binary, labelled `long`. The three execs run at once, one thread each, started with
// the first case; each driver's case waits for its own, so the binary takes 90 s, not 270.
#define BOOST_TEST_MODULE exec_no_timeout
#include <boost/test/unit_test.hpp>

#include "tests/runtime/driver_fixture.hpp"

#include <future>
#include <map>

using namespace sandboxd::runtime;
using sandboxd::test::driver_under_test;
using sandboxd::test::test_driver;

namespace {

constexpr test_driver k_drivers[] = {test_driver::hollow, test_driver::crun, test_driver::runsc};

// One driver's run: its own data directory and driver, a running sandbox "long", and the
// exec of `sleep 90` on a thread of its own. No assertion here (it runs before any case);
// the driver's case reports `failure`.
struct long_exec {
  sandboxd::test::temp_dir dir{"runtime"};
  std::string data = dir.path() + "/data";
  sandboxd::test::guardian cleanup{sandboxd::test::driver_fixture::crash_cleanup(dir.path())};
  std::unique_ptr<driver> d;
  std::string failure;
  std::future<outcome<exec_result>> result;
  exec_request request;

  explicit long_exec(test_driver which) {
    ::chmod(dir.path().c_str(), 0711); // sandboxes reach their root through it
    d = driver_under_test::make(data, true, which);
    create_request c;
    c.id = "long";
    if (auto r = d->create(c); !r) {
      failure = "create: " + r.err().message;
      return;
    }
    if (auto r = d->start("long"); !r) {
      failure = "start: " + r.err().message;
      return;
    }
    request.argv = {"sleep", "90"};
    result = std::async(std::launch::async, [this] { return d->exec("long", request); });
  }
  ~long_exec() {
    if (result.valid())
      result.wait();
    d->remove("long");
  }
};

std::map<test_driver, std::unique_ptr<long_exec>>& runs() {
  static std::map<test_driver, std::unique_ptr<long_exec>> all = [] {
    std::map<test_driver, std::unique_ptr<long_exec>> m;
    for (auto which : k_drivers)
      if (!driver_under_test::unavailable(which))
        m[which] = std::make_unique<long_exec>(which);
    return m;
  }();
  return all;
}

struct usable {
  test_driver which;
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    boost::test_tools::assertion_result r(true);
    if (auto why = driver_under_test::unavailable(which)) {
      r = false;
      r.message() << to_string(which) << " cannot run on this machine: " << *why;
    }
    return r;
  }
};

void runs_90_seconds_to_its_end(test_driver which) {
  auto& run = *runs().at(which);
  BOOST_TEST_REQUIRE(run.failure.empty(), run.failure);
  BOOST_TEST(run.request.timeout.count() == 0); // the default: none
  auto res = run.result.get();
  BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST(!res->timed_out);
  BOOST_TEST(res->signal == 0);
  BOOST_TEST(res->exit_code == 0, res->stderr_data);
  BOOST_TEST(res->duration >= std::chrono::seconds(90));
}

} // namespace

BOOST_AUTO_TEST_SUITE(exec_no_timeout)

BOOST_AUTO_TEST_CASE(an_exec_without_timeout_runs_90_seconds_to_its_end_on_hollow,
                     *boost::unit_test::precondition(usable{test_driver::hollow})) {
  runs_90_seconds_to_its_end(test_driver::hollow);
}

BOOST_AUTO_TEST_CASE(an_exec_without_timeout_runs_90_seconds_to_its_end_on_crun,
                     *boost::unit_test::precondition(usable{test_driver::crun})) {
  runs_90_seconds_to_its_end(test_driver::crun);
}

BOOST_AUTO_TEST_CASE(an_exec_without_timeout_runs_90_seconds_to_its_end_on_runsc,
                     *boost::unit_test::precondition(usable{test_driver::runsc})) {
  runs_90_seconds_to_its_end(test_driver::runsc);
}

BOOST_AUTO_TEST_SUITE_END()
