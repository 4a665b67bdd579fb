#include "network/egress_proxy.hpp"

#include "network/http_head.hpp"
#include "network/socket_address.hpp"
#include "network/tls_hello.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace sandboxd::network {
namespace {

using steady = std::chrono::steady_clock;

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

std::string errno_text(int e) {
  return std::strerror(e);
}

// What the first bytes name, once known.
struct named {
  std::string name;
  events::name_source source = events::name_source::none;
};

// Reads from `fd` into `buf` until the first bytes name the destination (or cannot), the
// limit, the wait or the stop. Nothing read is lost: the proxy sends `buf` on.
named read_first_bytes(int fd, int wake, std::vector<std::uint8_t>& buf,
                       std::chrono::milliseconds wait) {
  const auto deadline = steady::now() + wait;
  std::uint8_t chunk[4096];
  while (buf.size() < k_first_bytes_limit) {
    const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (left <= 0)
      return {};
    pollfd p[2] = {{fd, POLLIN, 0}, {wake, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left)) <= 0 || p[1].revents)
      return {};
    const auto room = std::min(sizeof chunk, k_first_bytes_limit - buf.size());
    const auto n = ::recv(fd, chunk, room, 0);
    if (n <= 0)
      return {};
    buf.insert(buf.end(), chunk, chunk + n);
    const auto tls = read_tls_hello(buf);
    if (tls.status == first_bytes_status::complete)
      return {tls.server_name,
              tls.server_name.empty() ? events::name_source::none : events::name_source::tls_sni};
    const auto http = read_http_head(buf);
    if (http.status == first_bytes_status::complete)
      return {http.host, http.host.empty() ? events::name_source::none
                         : http.connect    ? events::name_source::connect
                                           : events::name_source::http_host};
    const bool tls_done =
      tls.status == first_bytes_status::other || tls.status == first_bytes_status::malformed;
    const bool http_done =
      http.status == first_bytes_status::other || http.status == first_bytes_status::malformed;
    if (tls_done && http_done) // no name this proxy accepts: only an address rule allows it
      return {};
  }
  return {};
}

// Connects to `to` within `timeout`: the socket (non-blocking), or -1 and the errno.
int dial(const socket_address& to, std::chrono::milliseconds timeout, int& error) {
  sockaddr_storage s{};
  const auto len = to_sockaddr(to, s);
  const int fd = ::socket(s.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&s), len) != 0 && errno != EINPROGRESS) {
    error = errno;
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
    error = ETIMEDOUT;
    ::close(fd);
    return -1;
  }
  int so = 0;
  socklen_t n = sizeof so;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &n);
  if (so != 0) {
    error = so;
    ::close(fd);
    return -1;
  }
  return fd;
}

// One direction of a relayed connection: the bytes move through a pipe of its own by
// splice (never copied into the proxy), after `head` (the first bytes, read to learn the
// name) has been sent.
struct pipe_half {
  static constexpr std::size_t k_pipe_bytes = 1 << 20;
  int from = -1, to = -1;
  int pipe[2] = {-1, -1};
  std::vector<std::uint8_t> head;
  std::size_t head_at = 0;
  std::size_t in_pipe = 0;
  bool eof = false; // `from` ended; `to` is shut down for writing once all is sent
  bool shut = false;
  bool failed = false;
  std::uint64_t bytes = 0;

  pipe_half() {
    if (::pipe2(pipe, O_NONBLOCK | O_CLOEXEC) != 0)
      throw std::runtime_error("egress proxy: pipe: " + errno_text(errno));
    ::fcntl(pipe[1], F_SETPIPE_SZ, static_cast<int>(k_pipe_bytes)); // a smaller one still works
  }
  ~pipe_half() {
    ::close(pipe[0]);
    ::close(pipe[1]);
  }
  pipe_half(const pipe_half&) = delete;
  pipe_half& operator=(const pipe_half&) = delete;

  bool head_left() const { return head_at < head.size(); }
  bool pending() const { return head_left() || in_pipe > 0; }
  bool wants_input() const { return !eof && !head_left() && in_pipe < k_pipe_bytes; }
  bool done() const { return eof && !pending(); }

  void flush() {
    if (head_left()) {
      const auto n = ::send(to, head.data() + head_at, head.size() - head_at, MSG_NOSIGNAL);
      if (n > 0) {
        head_at += static_cast<std::size_t>(n);
        bytes += static_cast<std::uint64_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        fail();
      }
      return;
    }
    while (in_pipe > 0) {
      const auto n =
        ::splice(pipe[0], nullptr, to, nullptr, in_pipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n > 0) {
        in_pipe -= static_cast<std::size_t>(n);
        bytes += static_cast<std::uint64_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        fail();
      return;
    }
  }
  void fill() {
    if (!wants_input())
      return;
    const auto n = ::splice(from, nullptr, pipe[1], nullptr, k_pipe_bytes - in_pipe,
                            SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n > 0)
      in_pipe += static_cast<std::size_t>(n);
    else if (n == 0)
      eof = true;
    else if (errno != EAGAIN && errno != EINTR) {
      eof = true;
      failed = true;
    }
  }
  void fail() {
    eof = true;
    failed = true;
    head_at = head.size();
    in_pipe = 0;
  }
  // After poll: sends what is pending, takes what `from` has, sends again; shuts `to` down
  // for writing once `from` has ended and all is sent.
  void step() {
    flush();
    fill();
    flush();
    if (done() && !shut) {
      ::shutdown(to, SHUT_WR);
      shut = true;
    }
  }
};

} // namespace

std::vector<ip_address> node_own_addresses() {
  std::vector<ip_address> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    return out;
  for (auto* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr)
      continue;
    sockaddr_storage s{};
    if (i->ifa_addr->sa_family == AF_INET)
      std::memcpy(&s, i->ifa_addr, sizeof(sockaddr_in));
    else if (i->ifa_addr->sa_family == AF_INET6)
      std::memcpy(&s, i->ifa_addr, sizeof(sockaddr_in6));
    else
      continue;
    if (auto a = from_sockaddr(s))
      out.push_back(a->address);
  }
  ::freeifaddrs(list);
  return out;
}

egress_proxy::egress_proxy(proxy_options options, egress_book& book, egress_decider& decider)
    : options_(std::move(options)), book_(book), decider_(decider) {
  if (::pipe2(wake_, O_CLOEXEC) != 0)
    throw std::runtime_error("egress proxy: pipe: " + errno_text(errno));
  // The connection ids of this run: unique against every earlier run's still in the log.
  next_id_ = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch() /
                                        std::chrono::microseconds(1))
             << 8;
  try {
    acceptor_ =
      std::make_unique<tcp_acceptor>("egress proxy", options_.port, options_.max_connections,
                                     wake_[0], [this](int fd) { serve(fd); });
  } catch (...) {
    ::close(wake_[0]);
    ::close(wake_[1]);
    throw;
  }
}

egress_proxy::~egress_proxy() {
  stop();
}

std::size_t egress_proxy::open_connections() const {
  return acceptor_->active();
}

void egress_proxy::stop() {
  if (stopping_.exchange(true))
    return;
  const char c = 1;
  [[maybe_unused]] auto w = ::write(wake_[1], &c, 1);
  acceptor_->stop();
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void egress_proxy::serve(int fd) {
  const auto peer = peer_of(fd);
  const auto dialled = original_destination(fd);
  if (!peer || !dialled)
    return;
  const auto owner = book_.owner_of(peer->address);
  if (!owner) // not from a link the node knows (the table lets nothing else reach the port)
    return;
  {
    std::lock_guard l(mu_);
    auto& n = per_sandbox_[owner->sandbox_id];
    if (n >= options_.max_per_sandbox)
      return; // its share is taken: closed at once
    ++n;
  }
  struct release {
    egress_proxy* p;
    const std::string& id;
    ~release() {
      std::lock_guard l(p->mu_);
      if (--p->per_sandbox_[id] == 0)
        p->per_sandbox_.erase(id);
    }
  } held{this, owner->sandbox_id};
  std::vector<std::uint8_t> first;
  const auto n = read_first_bytes(fd, wake_[0], first, options_.first_bytes_wait);
  if (stopping_)
    return;

  events::net_destination d;
  d.protocol = events::net_protocol::tcp;
  d.name = n.name;
  d.source = n.source;
  d.address = to_string(dialled->address);
  d.port = dialled->port;
  d.address_class = to_string(
    classify(dialled->address, node_addresses{node_own_addresses(), options_.sandbox_ranges}));
  d.name_resolves =
    !n.name.empty() && book_.answered(owner->sandbox_id, n.name, dialled->address, steady::now());
  const std::string id = "c" + std::to_string(next_id_++);
  if (!decider_.open(*owner, id, d))
    return;

  const auto t0 = steady::now();
  events::connection_closed closed;
  closed.connection_id = id;
  int error = 0;
  const int up = dial(*dialled, options_.connect_timeout, error);
  if (up < 0) {
    closed.outcome = events::op_outcome::failed;
    closed.error_message = "could not reach " + to_string(*dialled) + ": " + errno_text(error);
    closed.duration = steady::now() - t0;
    decider_.closed(*owner, closed);
    return;
  }
  try {
    relay(fd, up, std::move(first), closed);
  } catch (const std::exception& e) {
    closed.outcome = events::op_outcome::failed;
    closed.error_message = e.what();
  }
  ::close(up);
  closed.duration = steady::now() - t0;
  decider_.closed(*owner, closed);
}

void egress_proxy::relay(int fd, int up, std::vector<std::uint8_t> first,
                         events::connection_closed& closed) {
  set_nonblocking(fd);
  pipe_half out, in;
  out.from = fd;
  out.to = up;
  in.from = up;
  in.to = fd;
  out.head = std::move(first); // the bytes read to learn the name go first
  bool interrupted = false;
  while (!(out.done() && in.done())) {
    pollfd p[3] = {{fd, 0, 0}, {up, 0, 0}, {wake_[0], POLLIN, 0}};
    if (out.wants_input())
      p[0].events |= POLLIN;
    if (in.pending())
      p[0].events |= POLLOUT;
    if (in.wants_input())
      p[1].events |= POLLIN;
    if (out.pending())
      p[1].events |= POLLOUT;
    if (::poll(p, 3, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[2].revents) {
      interrupted = true;
      break;
    }
    out.step();
    in.step();
    if (out.failed || in.failed) // a reset or an error, not an end: the other way ends too
      break;
  }
  closed.bytes_out = out.bytes;
  closed.bytes_in = in.bytes;
  closed.outcome = interrupted ? events::op_outcome::interrupted : events::op_outcome::completed;
}

} // namespace sandboxd::network
