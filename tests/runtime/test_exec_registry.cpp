// exec_registry: a signal reaches an exec that registers just after it was sent (the node
// answers a start before the driver's exec has begun), and is not_found at once for an exec
// that ended.
#define BOOST_TEST_MODULE exec_registry
#include <boost/test/unit_test.hpp>

#include "runtime/exec_registry.hpp"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using sandboxd::errc;
using sandboxd::runtime::exec_registry;

namespace {
using steady = std::chrono::steady_clock;
}

BOOST_AUTO_TEST_CASE(a_signal_sent_before_the_exec_registers_reaches_it) {
  exec_registry r;
  std::atomic<int> got{0};
  std::thread starter([&] {
    std::this_thread::sleep_for(200ms);
    auto e = r.add("sb-1", "ex-1", [&](int s) -> sandboxd::runtime::outcome<void> {
      got = s;
      return {};
    });
    BOOST_REQUIRE(e.ok());
    std::this_thread::sleep_for(500ms); // runs a while, then ends
  });
  auto res = r.signal("sb-1", "ex-1", 15);
  starter.join();
  BOOST_TEST(res.ok(), (res ? "" : res.err().message));
  BOOST_TEST(got.load() == 15);
}

BOOST_AUTO_TEST_CASE(an_exec_that_ended_is_not_found_at_once) {
  exec_registry r;
  {
    auto e = r.add("sb-1", "ex-1", [](int) -> sandboxd::runtime::outcome<void> { return {}; });
    BOOST_REQUIRE(e.ok());
  }
  const auto t0 = steady::now();
  auto res = r.signal("sb-1", "ex-1", 9);
  BOOST_TEST(!res.ok());
  BOOST_TEST((res.err().code == errc::not_found));
  BOOST_TEST((steady::now() - t0 < exec_registry::k_start_wait / 2));
}

BOOST_AUTO_TEST_CASE(an_exec_that_never_starts_is_not_found_after_the_wait) {
  exec_registry r;
  const auto t0 = steady::now();
  auto res = r.signal("sb-1", "never", 9);
  BOOST_TEST(!res.ok());
  BOOST_TEST((res.err().code == errc::not_found));
  BOOST_TEST((steady::now() - t0 >= exec_registry::k_start_wait));
}

BOOST_AUTO_TEST_CASE(only_an_exec_with_a_terminal_resizes) {
  exec_registry r;
  auto none = [](int) -> sandboxd::runtime::outcome<void> { return {}; };
  std::pair<int, int> got{0, 0};
  auto plain = r.add("sb-1", "plain", none);
  auto term = r.add("sb-1", "term", none,
                    [&](std::uint16_t c, std::uint16_t rows) -> sandboxd::runtime::outcome<void> {
                      got = {c, rows};
                      return {};
                    });
  BOOST_REQUIRE(plain.ok());
  BOOST_REQUIRE(term.ok());
  BOOST_TEST(r.resize("sb-1", "term", 132, 50).ok());
  BOOST_TEST((got == std::pair<int, int>{132, 50}));
  BOOST_TEST((r.resize("sb-1", "plain", 10, 10).code() == errc::invalid_argument));
  BOOST_TEST((r.resize("sb-1", "other", 10, 10).code() == errc::not_found));
  BOOST_TEST((r.resize("sb-2", "term", 10, 10).code() == errc::not_found)); // another sandbox's
}
