// blocking_pool.hpp — the threads that run blocking work (runtime driver calls) off CAF's
// scheduler threads.
//
// Guarantees: tasks start in the order they were posted (FIFO), on one of `threads`
// dedicated threads; the destructor runs every task already posted, then joins. A task
// hands its result back by sending a message; it never touches actor state.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sandboxd::actors {

class blocking_pool {
public:
  explicit blocking_pool(std::size_t threads);
  ~blocking_pool();
  blocking_pool(const blocking_pool&) = delete;
  blocking_pool& operator=(const blocking_pool&) = delete;

  void post(std::function<void()> task);

private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace sandboxd::actors
