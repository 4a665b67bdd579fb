// socket_address — an IP address and port as the proxy handles them, and what the kernel
// knows of a redirected connection: the address the sandbox dialled (SO_ORIGINAL_DST, kept
// by conntrack when nftables redirected it to the proxy).
#pragma once

#include "network/address.hpp"

#include <cstdint>
#include <optional>
#include <string>

struct sockaddr_storage;

namespace sandboxd::network {

struct socket_address {
  ip_address address;
  std::uint16_t port = 0;
  bool operator==(const socket_address&) const = default;
};

// "198.51.100.7:443", "[2001:db8::1]:443".
std::string to_string(const socket_address& a);
std::optional<socket_address> from_sockaddr(const sockaddr_storage& s);
// Fills `s` and returns its length.
unsigned to_sockaddr(const socket_address& a, sockaddr_storage& s);

// The destination TCP connection `fd` was dialled to, as conntrack keeps it: for a
// connection nftables redirected, the address the sandbox dialled; for one that was not, the
// socket's own local address (the sandbox dialled the proxy itself). nullopt when unknown.
std::optional<socket_address> original_destination(int fd);
// The peer and the local end of a connected socket.
std::optional<socket_address> peer_of(int fd);
std::optional<socket_address> local_of(int fd);

} // namespace sandboxd::network
