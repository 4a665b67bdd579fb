// loop_bridge — hands work from any thread (CAF's actor threads, worker threads, the log
// follower) to one kj event loop.
//
// The other side cannot use kj::Executor: its executeAsync() needs an event loop on the
// calling thread, and executeSync() blocks, which an actor's reply must never do. Instead
// post() appends a closure to a mutex-guarded queue and, when the queue was empty, writes
// an eventfd that the loop observes (kj::UnixEventPort::FdObserver); the loop then runs the
// queued closures in posting order. post() never blocks beyond that mutex and one write().
//
// expect<T>() (on the loop thread) gives a kj promise and a completer that any thread may
// call once; the value reaches the promise through post(). The loop keeps the fulfillers in
// a table, so no kj object is ever touched or destroyed off the loop thread. After the
// bridge is destroyed, post() drops what it is given (its closures never run) and a
// completer does nothing; a promise whose caller went away simply ignores its value.
#pragma once

#include <kj/async-unix.h>
#include <kj/async.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sandboxd::api {

class loop_bridge {
public:
  // On the loop thread; `port` is the loop's (kj::AsyncIoContext::unixEventPort).
  explicit loop_bridge(kj::UnixEventPort& port);
  ~loop_bridge();
  loop_bridge(const loop_bridge&) = delete;
  loop_bridge& operator=(const loop_bridge&) = delete;

  // Any thread. Runs `fn` on the loop thread.
  void post(std::function<void()> fn) const { post(shared_, std::move(fn)); }

  // A post() that stays safe to call after the bridge is gone (it then drops `fn`): for
  // threads that may outlive the bridge.
  std::function<void(std::function<void()>)> poster() const {
    return [shared = shared_](std::function<void()> fn) { post(shared, std::move(fn)); };
  }

  // Loop thread: a promise for a T, and a completer (any thread, once).
  template <class T>
  std::pair<kj::Promise<T>, std::function<void(T)>> expect() {
    auto paf = kj::newPromiseAndFulfiller<T>();
    const auto id = next_id_++;
    pending_.emplace(id, std::make_unique<waiting<T>>(kj::mv(paf.fulfiller)));
    std::function<void(T)> complete = [shared = shared_, self = this, id](T value) {
      post(shared, [self, id, value = std::move(value)]() mutable {
        auto it = self->pending_.find(id);
        if (it == self->pending_.end())
          return;
        auto holder = std::move(it->second);
        self->pending_.erase(it);
        static_cast<waiting<T>&>(*holder).fulfiller->fulfill(std::move(value));
      });
    };
    return {kj::mv(paf.promise), std::move(complete)};
  }

  // Completions and posts waiting on the loop (for tests and stats).
  std::size_t pending() const { return pending_.size(); }

private:
  struct shared_state {
    std::mutex mu;
    std::vector<std::function<void()>> queue;
    bool signalled = false;
    bool closed = false;
    int fd = -1;
    ~shared_state();
  };
  struct waiting_base {
    virtual ~waiting_base() noexcept(false) = default;
  };
  template <class T>
  struct waiting final : waiting_base {
    explicit waiting(kj::Own<kj::PromiseFulfiller<T>> f) : fulfiller(kj::mv(f)) {}
    kj::Own<kj::PromiseFulfiller<T>> fulfiller;
  };

  static void post(const std::shared_ptr<shared_state>& s, std::function<void()> fn);
  kj::Promise<void> drain_forever();

  std::shared_ptr<shared_state> shared_;
  kj::UnixEventPort::FdObserver observer_;
  std::unordered_map<std::uint64_t, std::unique_ptr<waiting_base>> pending_;
  std::uint64_t next_id_ = 0;
  kj::Promise<void> task_ = nullptr; // last: drains while the rest exists
};

} // namespace sandboxd::api
