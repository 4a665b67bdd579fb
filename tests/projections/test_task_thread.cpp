// task_thread: one thread for many tasks, in order, results and exceptions through futures,
// and nothing submitted is dropped at destruction.
#define BOOST_TEST_MODULE task_thread
#include <boost/test/unit_test.hpp>

#include "projections/task_thread.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using sandboxd::projections::task_thread;

BOOST_AUTO_TEST_CASE(tasks_run_in_order_on_one_thread_other_than_the_caller) {
  task_thread t;
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
  task_thread t;
  auto failing = t.submit([]() -> int { throw std::runtime_error("log read failed"); });
  auto next = t.submit([] { return 7; });
  BOOST_CHECK_THROW(failing.get(), std::runtime_error);
  BOOST_TEST(next.get() == 7);
}

BOOST_AUTO_TEST_CASE(destruction_runs_every_submitted_task_first) {
  std::atomic<int> ran{0};
  {
    task_thread t;
    for (int i = 0; i < 50; ++i)
      t.submit([&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ++ran;
      });
  }
  BOOST_TEST(ran.load() == 50);
}
