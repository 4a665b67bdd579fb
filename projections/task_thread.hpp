// task_thread — one thread, started once, that runs the tasks handed to it one after
// another. For work a caller moves to another thread on every step (the projector's
// prefetch, a batch's audit hashing and billing rows): starting a thread each time
// (std::async) cost some 40–50 µs of CPU on the development machine, which under a steady
// stream of small steps is microseconds per event.
//
// submit() returns a future of the task's result (or of its exception). Tasks run in
// submission order. The destructor runs the tasks already submitted, then joins the thread;
// a task must not wait for a later task of the same task_thread. (actors::blocking_pool is
// the same loop for the actors; it is not used here because the actors library brings the
// runtime with it, and the read side depends on the event log alone.)
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

namespace sandboxd::projections {

class task_thread {
public:
  task_thread();
  ~task_thread();
  task_thread(const task_thread&) = delete;
  task_thread& operator=(const task_thread&) = delete;

  template <class F>
  std::future<std::invoke_result_t<F>> submit(F f) {
    using result = std::invoke_result_t<F>;
    auto task = std::make_shared<std::packaged_task<result()>>(std::move(f));
    auto done = task->get_future();
    push([task] { (*task)(); });
    return done;
  }

private:
  void push(std::function<void()> task);
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_; // last: started once the rest exists
};

} // namespace sandboxd::projections
