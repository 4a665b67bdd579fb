#include "actors/blocking_pool.hpp"

#include <pthread.h>

namespace sandboxd::actors {

blocking_pool::blocking_pool(std::size_t threads) {
  if (threads == 0)
    threads = 1;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] { run(); });
}

blocking_pool::~blocking_pool() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void blocking_pool::post(std::function<void()> task) {
  {
    std::lock_guard l(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void blocking_pool::run() {
  ::pthread_setname_np(::pthread_self(), "sbd-pool");
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty())
        return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

} // namespace sandboxd::actors
