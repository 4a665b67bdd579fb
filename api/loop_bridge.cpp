#include "api/loop_bridge.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace sandboxd::api {
namespace {

int make_eventfd() {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "eventfd for the RPC loop");
  return fd;
}

} // namespace

loop_bridge::shared_state::~shared_state() {
  if (fd >= 0)
    ::close(fd);
}

loop_bridge::loop_bridge(kj::UnixEventPort& port)
    : shared_([] {
        auto s = std::make_shared<shared_state>();
        s->fd = make_eventfd();
        return s;
      }()),
      observer_(port, shared_->fd, kj::UnixEventPort::FdObserver::OBSERVE_READ) {
  task_ = drain_forever().eagerlyEvaluate([](kj::Exception&& e) {
    kj::throwFatalException(kj::mv(e)); // a failed read of our own eventfd: a fault
  });
}

loop_bridge::~loop_bridge() {
  std::lock_guard l(shared_->mu);
  shared_->closed = true;
  shared_->queue.clear();
}

void loop_bridge::post(const std::shared_ptr<shared_state>& s, std::function<void()> fn) {
  std::lock_guard l(s->mu);
  if (s->closed)
    return;
  s->queue.push_back(std::move(fn));
  if (s->signalled)
    return;
  s->signalled = true;
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is near overflow, i.e. the loop is already woken.
  (void)!::write(s->fd, &one, sizeof one);
}

kj::Promise<void> loop_bridge::drain_forever() {
  return observer_.whenBecomesReadable().then([this]() {
    // Read the eventfd before taking the queue: a post after the read either finds
    // `signalled` still set (and its closure is in the batch taken below) or writes anew.
    std::uint64_t count = 0;
    (void)!::read(shared_->fd, &count, sizeof count);
    std::vector<std::function<void()>> batch;
    {
      std::lock_guard l(shared_->mu);
      batch.swap(shared_->queue);
      shared_->signalled = false;
    }
    for (auto& fn : batch)
      fn();
    return drain_forever();
  });
}

} // namespace sandboxd::api
