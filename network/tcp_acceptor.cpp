#include "network/tcp_acceptor.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <exception>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace sandboxd::network {

int bind_any_v4(const char* what, int type, std::uint16_t port) {
  const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0)
    throw std::runtime_error(std::string(what) + ": socket: " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      (type == SOCK_STREAM && ::listen(fd, 1024) != 0)) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(std::string(what) + ": cannot listen on port " + std::to_string(port) +
                             ": " + std::strerror(e) + "; choose a free port");
  }
  return fd;
}

std::uint16_t bound_port(int fd) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  return ntohs(a.sin_port);
}

tcp_acceptor::tcp_acceptor(const char* what, std::uint16_t port, std::size_t max, int wake,
                           std::function<void(int fd)> serve)
    : listener_(bind_any_v4(what, SOCK_STREAM, port)), wake_(wake), max_(max),
      port_(bound_port(listener_)), serve_(std::move(serve)) {
  acceptor_ = std::thread([this] { accept_loop(); });
}

tcp_acceptor::~tcp_acceptor() {
  stop();
}

std::size_t tcp_acceptor::active() const {
  std::lock_guard l(mu_);
  return active_;
}

void tcp_acceptor::stop() {
  if (acceptor_.joinable())
    acceptor_.join();
  std::unique_lock l(mu_);
  idle_.wait(l, [&] { return active_ == 0; });
  if (listener_ >= 0)
    ::close(listener_);
  listener_ = -1;
}

void tcp_acceptor::accept_loop() {
  for (;;) {
    pollfd p[2] = {{listener_, POLLIN, 0}, {wake_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR)
      return;
    if (p[1].revents)
      return;
    if (!(p[0].revents & POLLIN))
      continue;
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    {
      std::lock_guard l(mu_);
      if (active_ >= max_) {
        ::close(fd);
        continue;
      }
      ++active_;
    }
    std::thread([this, fd] {
      try {
        serve_(fd);
      } catch (const std::exception&) {
        // A fault of the host (no descriptors left): this connection ends, the others go on.
      }
      ::close(fd);
      std::lock_guard l(mu_);
      if (--active_ == 0)
        idle_.notify_all();
    }).detach();
  }
}

} // namespace sandboxd::network
