#include "projections/task_thread.hpp"

namespace sandboxd::projections {

task_thread::task_thread() : thread_([this] { run(); }) {}

task_thread::~task_thread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void task_thread::push(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void task_thread::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty())
        return; // stopping, and every submitted task ran
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task(); // a packaged_task: its exception goes to its future
  }
}

} // namespace sandboxd::projections
