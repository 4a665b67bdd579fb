// tcp_acceptor — a TCP listener on every IPv4 address of the node whose connections are each
// served on a thread of their own, at most `max` at once (past it a connection is closed at
// once). The egress proxy and the resolver's TCP side are made of one. Stopping is the
// owner's `wake` descriptor becoming readable (the serving functions poll it too): stop()
// then joins the accepting thread and waits until every connection has been served.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace sandboxd::network {

class tcp_acceptor {
public:
  // Listens at once on `port` (0: one the kernel picks); throws std::runtime_error naming
  // `what` and the port when it cannot. `serve` gets the connection (closed after it).
  tcp_acceptor(const char* what, std::uint16_t port, std::size_t max, int wake,
               std::function<void(int fd)> serve);
  ~tcp_acceptor();
  tcp_acceptor(const tcp_acceptor&) = delete;
  tcp_acceptor& operator=(const tcp_acceptor&) = delete;

  std::uint16_t port() const { return port_; }
  std::size_t active() const;
  // Call once `wake` is readable.
  void stop();

private:
  void accept_loop();

  int listener_ = -1;
  int wake_ = -1;
  std::size_t max_ = 0;
  std::uint16_t port_ = 0;
  std::function<void(int)> serve_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::size_t active_ = 0;
  std::thread acceptor_;
};

// Binds a socket of `type` (SOCK_STREAM listens) to `port` on every IPv4 address; throws
// std::runtime_error naming `what` and the port when it cannot.
int bind_any_v4(const char* what, int type, std::uint16_t port);
// The local port of a bound socket.
std::uint16_t bound_port(int fd);

} // namespace sandboxd::network
