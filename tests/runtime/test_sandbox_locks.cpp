// sandbox_locks: one lock per id, held apart for different ids, and no entry left for
// an id once no call holds or waits for its lock (made-up ids cost nothing afterwards).
#define BOOST_TEST_MODULE sandbox_locks
#include <boost/test/unit_test.hpp>

#include "runtime/sandbox_locks.hpp"

#include <atomic>
#include <chrono>
#include <thread>

using sandboxd::runtime::sandbox_locks;

BOOST_AUTO_TEST_CASE(entries_live_only_while_a_lock_is_held_or_awaited) {
  sandbox_locks locks;
  for (int i = 0; i < 10000; ++i)
    auto g = locks.lock("made-up-" + std::to_string(i));
  BOOST_TEST(locks.size() == 0u);
  {
    auto a = locks.lock("a");
    auto b = locks.lock("b");
    BOOST_TEST(locks.size() == 2u);
  }
  BOOST_TEST(locks.size() == 0u);
}

BOOST_AUTO_TEST_CASE(one_id_is_serialised_and_its_waiter_keeps_the_entry) {
  sandbox_locks locks;
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  std::thread t;
  {
    auto g = locks.lock("x");
    t = std::thread([&] {
      auto g2 = locks.lock("x");
      overlap = overlap || inside.load() != 0;
    });
    inside = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    BOOST_TEST(locks.size() == 1u); // the waiter holds the entry too
    inside = 0;
  }
  t.join();
  BOOST_TEST(!overlap.load());
  BOOST_TEST(locks.size() == 0u);
}
