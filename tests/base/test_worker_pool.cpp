// worker_pool: with one thread, many tasks, in order, results and exceptions through futures,
// and nothing submitted is dropped at destruction.
#define BOOST_TEST_MODULE worker_pool
#include <boost/test/unit_test.hpp>

#include "base/worker_pool.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using sandboxd::worker_pool;

BOOST_AUTO_TEST_CASE(tasks_run_in_order_on_one_thread_other_than_the_caller) {
  worker_pool t;
  std::vector<int> order;
  std::vector<std::future<std::thread::id>> ids;
  for (int i = 0; i < 100; ++i)
    ids.push_back(t.submit([&order, i] {
      order.push_back(i); // only the task thread touches it until the futures are ready
      return std::this_thread::get_id();
    }));
  const auto first = ids.front().get();
  BOOST_TEST((first != std::this_thread::get_id()));
  for (std::size_t i = 1; i < ids.size(); ++i)
    BOOST_TEST((ids[i].get() == first));
  for (int i = 0; i < 100; ++i)
    BOOST_TEST(order[static_cast<std::size_t>(i)] == i);
}

BOOST_AUTO_TEST_CASE(a_task_exception_reaches_its_future_and_the_thread_goes_on) {
  worker_pool t;
  auto failing = t.submit([]() -> int { throw std::runtime_error("log read failed"); });
  auto next = t.submit([] { return 7; });
  BOOST_CHECK_THROW(failing.get(), std::runtime_error);
  BOOST_TEST(next.get() == 7);
}

BOOST_AUTO_TEST_CASE(destruction_runs_every_submitted_task_first) {
  std::atomic<int> ran{0};
  {
    worker_pool t;
    for (int i = 0; i < 50; ++i)
      t.post([&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ++ran;
      });
  }
  BOOST_TEST(ran.load() == 50);
}

BOOST_AUTO_TEST_CASE(several_threads_run_tasks_at_once) {
  worker_pool pool(4, "sbd-test");
  std::atomic<int> inside{0}, most{0};
  std::vector<std::future<void>> done;
  for (int i = 0; i < 4; ++i)
    done.push_back(pool.submit([&] {
      const int now = ++inside;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      // Every task waits until all four are inside, so one thread alone never finishes.
      for (int spin = 0; spin < 2000 && inside.load() < 4; ++spin)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }));
  for (auto& f : done)
    f.get();
  BOOST_TEST(most.load() == 4);
}
