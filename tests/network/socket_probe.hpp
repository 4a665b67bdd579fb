// socket_probe — small blocking socket helpers for the network tests: listeners that say
// whether something arrived within a time, and connects, datagrams and pings that say how
// they ended (the errno), made in whichever network namespace the calling thread is in.
#pragma once

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <functional>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <optional>
#include <ostream>
#include <poll.h>
#include <sched.h>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace sandboxd::test::probe {

class fd_handle {
public:
  fd_handle() = default;
  explicit fd_handle(int fd) : fd_(fd) {}
  fd_handle(fd_handle&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  fd_handle& operator=(fd_handle&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~fd_handle() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

inline std::ostream& operator<<(std::ostream& out, const fd_handle& f) {
  return out << "fd " << f.get();
}

inline bool readable_within(int fd, std::chrono::milliseconds t) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, int(t.count())) > 0;
}

// Runs `f` on a thread inside the network namespace at `path` (a bind mount or a
// /proc/<pid>/fd/<n>), and waits.
inline void in_netns(const std::string& path, const std::function<void()>& f) {
  std::exception_ptr failed;
  std::thread t([&] {
    try {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0)
        throw std::runtime_error("cannot enter the network namespace " + path);
      ::close(fd);
      f();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  t.join();
  if (failed)
    std::rethrow_exception(failed);
}

inline sockaddr_storage sockaddr_of(const std::string& address, std::uint16_t port,
                                    socklen_t& len) {
  sockaddr_storage s{};
  if (address.find(':') != std::string::npos) {
    auto& a = reinterpret_cast<sockaddr_in6&>(s);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    if (::inet_pton(AF_INET6, address.c_str(), &a.sin6_addr) != 1)
      throw std::invalid_argument("not an address: " + address);
    len = sizeof a;
  } else {
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
      throw std::invalid_argument("not an address: " + address);
    len = sizeof a;
  }
  return s;
}

struct datagram {
  std::string data;
  sockaddr_storage from{};
  socklen_t from_len = 0;
  in_pktinfo to{}; // where it was addressed (IP_PKTINFO)
};

// A TCP or UDP socket bound to `address`:`port` (0: any free port, then `port` says which).
class listener {
public:
  listener(const std::string& address, int type, std::uint16_t want_port = 0) : type_(type) {
    fd_ = fd_handle(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (type == SOCK_DGRAM)
      ::setsockopt(fd_.get(), IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    socklen_t len = 0;
    auto a = sockaddr_of(address, want_port, len);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), len) != 0)
      throw std::runtime_error("bind " + address + ": " + std::strerror(errno));
    if (type == SOCK_STREAM && ::listen(fd_.get(), 64) != 0)
      throw std::runtime_error("listen");
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(reinterpret_cast<sockaddr_in&>(a).sin_port);
  }

  fd_handle accept_within(std::chrono::milliseconds t) {
    if (!readable_within(fd_.get(), t))
      return {};
    return fd_handle(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }

  std::optional<datagram> receive_within(std::chrono::milliseconds t) {
    if (!readable_within(fd_.get(), t))
      return std::nullopt;
    datagram d;
    char buf[2048];
    char control[256];
    iovec iov{buf, sizeof buf};
    msghdr m{};
    m.msg_name = &d.from;
    m.msg_namelen = sizeof d.from;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_.get(), &m, 0);
    if (n < 0)
      return std::nullopt;
    d.from_len = m.msg_namelen;
    d.data.assign(buf, std::size_t(n));
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
        std::memcpy(&d.to, CMSG_DATA(c), sizeof d.to);
    return d;
  }

  void reply(const datagram& d, const std::string& text) {
    ::sendto(fd_.get(), text.data(), text.size(), 0, reinterpret_cast<const sockaddr*>(&d.from),
             d.from_len);
  }

  int fd() const { return fd_.get(); }
  std::uint16_t port = 0;

private:
  int type_;
  fd_handle fd_;
};

struct connection {
  fd_handle fd;
  int errno_value = 0;
  std::string error;
  bool ok() const { return static_cast<bool>(fd); }
};

// A TCP connection to `address`:`port`, from `source` when given; the errno says how a
// failure ended (ECONNREFUSED: refused at once, ETIMEDOUT: nothing came back in `t`).
inline connection connect_tcp(const std::string& address, std::uint16_t port,
                              const std::string& source = "",
                              std::chrono::milliseconds t = std::chrono::milliseconds(2000)) {
  connection c;
  socklen_t len = 0;
  auto a = sockaddr_of(address, port, len);
  fd_handle fd(::socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!source.empty()) {
    socklen_t slen = 0;
    auto s = sockaddr_of(source, 0, slen);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&s), slen) != 0) {
      c.errno_value = errno;
      c.error = std::string("bind: ") + std::strerror(errno);
      return c;
    }
  }
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 && errno != EINPROGRESS) {
    c.errno_value = errno;
    c.error = std::string("connect: ") + std::strerror(errno);
    return c;
  }
  pollfd p{fd.get(), POLLOUT, 0};
  if (::poll(&p, 1, int(t.count())) <= 0) {
    c.errno_value = ETIMEDOUT;
    c.error = "connect: no answer within " + std::to_string(t.count()) + " ms";
    return c;
  }
  int err = 0;
  socklen_t elen = sizeof err;
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) {
    c.errno_value = err;
    c.error = std::string("connect: ") + std::strerror(err);
    return c;
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  c.fd = std::move(fd);
  return c;
}

inline std::string read_some(int fd, std::chrono::milliseconds t) {
  if (!readable_within(fd, t))
    return {};
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  return n > 0 ? std::string(buf, std::size_t(n)) : std::string();
}

// Sends `text` in one datagram from a connected UDP socket and waits a second for one back;
// `refused` gets the errno of a refusal (an ICMP error came back).
inline std::optional<std::string> udp_exchange(const std::string& address, std::uint16_t port,
                                               const std::string& text, int* refused = nullptr) {
  socklen_t len = 0;
  auto a = sockaddr_of(address, port, len);
  fd_handle fd(::socket(a.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (refused)
    *refused = 0;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::send(fd.get(), text.data(), text.size(), 0) < 0) {
    if (refused)
      *refused = errno;
    return std::nullopt;
  }
  if (!readable_within(fd.get(), std::chrono::milliseconds(1000)))
    return std::nullopt;
  char buf[2048];
  ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
  if (n < 0) {
    if (refused)
      *refused = errno;
    return std::nullopt;
  }
  return std::string(buf, std::size_t(n));
}

// Whether `address` answers an ICMP echo within half a second (a raw socket: needs
// CAP_NET_RAW in the calling thread's namespace).
inline bool icmp_echo(const std::string& address) {
  fd_handle fd(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (!fd)
    return false;
  socklen_t len = 0;
  auto a = sockaddr_of(address, 0, len);
  icmphdr h{};
  h.type = ICMP_ECHO;
  h.un.echo.id = htons(0x5bd);
  h.un.echo.sequence = htons(1);
  std::uint32_t sum = 0;
  auto* w = reinterpret_cast<const std::uint16_t*>(&h);
  for (std::size_t i = 0; i < sizeof h / 2; ++i)
    sum += w[i];
  sum = (sum >> 16) + (sum & 0xffff);
  h.checksum = std::uint16_t(~(sum + (sum >> 16)));
  if (::sendto(fd.get(), &h, sizeof h, 0, reinterpret_cast<sockaddr*>(&a), len) < 0)
    return false;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    if (!readable_within(fd.get(), std::chrono::milliseconds(100)))
      continue;
    char buf[1500];
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 28)
      continue;
    std::size_t ihl = std::size_t(buf[0] & 0x0f) * 4;
    if (std::size_t(n) >= ihl + 8 && std::uint8_t(buf[ihl]) == ICMP_ECHOREPLY)
      return true;
  }
  return false;
}

} // namespace sandboxd::test::probe
