#include "network/socket_address.hpp"

#include <arpa/inet.h>
#include <cstring>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace sandboxd::network {

std::string to_string(const socket_address& a) {
  std::string host = to_string(a.address);
  if (a.address.family == family::v6)
    host = "[" + host + "]";
  return host + ":" + std::to_string(a.port);
}

std::optional<socket_address> from_sockaddr(const sockaddr_storage& s) {
  socket_address out;
  if (s.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(s);
    out.address.family = family::v4;
    std::memcpy(out.address.bytes.data(), &in.sin_addr, 4);
    out.port = ntohs(in.sin_port);
    return out;
  }
  if (s.ss_family == AF_INET6) {
    const auto& in = reinterpret_cast<const sockaddr_in6&>(s);
    out.address.family = family::v6;
    std::memcpy(out.address.bytes.data(), &in.sin6_addr, 16);
    out.port = ntohs(in.sin6_port);
    return out;
  }
  return std::nullopt;
}

unsigned to_sockaddr(const socket_address& a, sockaddr_storage& s) {
  std::memset(&s, 0, sizeof s);
  if (a.address.family == family::v4) {
    auto& in = reinterpret_cast<sockaddr_in&>(s);
    in.sin_family = AF_INET;
    std::memcpy(&in.sin_addr, a.address.bytes.data(), 4);
    in.sin_port = htons(a.port);
    return sizeof in;
  }
  auto& in = reinterpret_cast<sockaddr_in6&>(s);
  in.sin6_family = AF_INET6;
  std::memcpy(&in.sin6_addr, a.address.bytes.data(), 16);
  in.sin6_port = htons(a.port);
  return sizeof in;
}

std::optional<socket_address> original_destination(int fd) {
  sockaddr_storage s{};
  socklen_t n = sizeof(sockaddr_in);
  if (::getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &s, &n) == 0)
    return from_sockaddr(s);
  n = sizeof(sockaddr_in6);
  if (::getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &s, &n) == 0)
    return from_sockaddr(s);
  return std::nullopt;
}

std::optional<socket_address> peer_of(int fd) {
  sockaddr_storage s{};
  socklen_t n = sizeof s;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&s), &n) != 0)
    return std::nullopt;
  return from_sockaddr(s);
}

std::optional<socket_address> local_of(int fd) {
  sockaddr_storage s{};
  socklen_t n = sizeof s;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &n) != 0)
    return std::nullopt;
  return from_sockaddr(s);
}

} // namespace sandboxd::network
