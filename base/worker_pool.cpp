#include "base/worker_pool.hpp"

#include <pthread.h>

namespace sandboxd {

worker_pool::worker_pool(std::size_t threads, std::string name) : name_(std::move(name)) {
  if (name_.size() > 15)
    name_.resize(15);
  if (threads == 0)
    threads = 1;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] { run(); });
}

worker_pool::~worker_pool() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void worker_pool::post(std::function<void()> task) {
  {
    std::lock_guard l(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void worker_pool::run() {
  ::pthread_setname_np(::pthread_self(), name_.c_str());
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty())
        return; // stopping, and every posted task ran
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

} // namespace sandboxd
