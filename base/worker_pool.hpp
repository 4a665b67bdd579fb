// worker_pool.hpp — threads, started once, that run the tasks handed to them: blocking
// runtime calls off CAF's scheduler (the actors), work moved to another thread on every
// step (the projector's prefetch, audit hashing and billing rows).
//
// Guarantees: tasks start in the order they were posted (FIFO), each on one of the pool's
// threads; with one thread they also finish in that order. submit() returns a future of
// the task's result (or of its exception). The destructor runs every task already posted,
// then joins. A task must not wait for a later task of the same one-thread pool.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace sandboxd {

class worker_pool {
public:
  // `name` (at most 15 characters) names the threads for ps and debuggers.
  explicit worker_pool(std::size_t threads = 1, std::string name = "sbd-worker");
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  void post(std::function<void()> task);

  template <class F>
  std::future<std::invoke_result_t<F>> submit(F f) {
    using result_type = std::invoke_result_t<F>;
    auto task = std::make_shared<std::packaged_task<result_type()>>(std::move(f));
    auto done = task->get_future();
    post([task] { (*task)(); });
    return done;
  }

private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::string name_;
  std::vector<std::thread> threads_; // last: started once the rest exists
};

} // namespace sandboxd
