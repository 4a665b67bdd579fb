// address — IP addresses and CIDR blocks as values, and the class of an address that the
// egress policy decides on (policy.hpp). Pure: no socket, no resolver.
//
// An address is IPv4 or IPv6, kept as 16 bytes (IPv4 in the low 4). An IPv4-mapped IPv6
// address (::ffff:a.b.c.d) and the NAT64 well-known prefix (64:ff9b::a.b.c.d) are classified
// as the IPv4 address they carry, so that no spelling of a private or host address passes
// for a public one.
#pragma once

#include "base/result.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::network {

enum class family : std::uint8_t { v4, v6 };

struct ip_address {
  network::family family = network::family::v4;
  std::array<std::uint8_t, 16> bytes{}; // v4: bytes[0..3], the rest zero

  static ip_address v4(std::uint32_t host_order);
  // The IPv4 address an IPv4-mapped or NAT64 (64:ff9b::/96) address carries; else itself.
  ip_address unmapped() const;
  bool operator==(const ip_address&) const = default;
  auto operator<=>(const ip_address&) const = default;
};

// "192.0.2.1", "2001:db8::1" (no brackets, no zone); nullopt for anything else.
std::optional<ip_address> parse_address(std::string_view text);
// The canonical text (inet_ntop's).
std::string to_string(const ip_address& a);

struct cidr {
  ip_address base; // host bits zero
  std::uint8_t prefix = 0;
  bool contains(const ip_address& a) const; // of the same family, after unmapped()
  bool operator==(const cidr&) const = default;
};

// "10.0.0.0/8", "2001:db8::/32", or a bare address (a /32 or /128). Host bits set below the
// prefix are invalid_argument (say "10.1.0.0/16", not "10.1.2.3/16"), as is anything else
// that is not a block.
result<cidr> parse_cidr(std::string_view text);
std::string to_string(const cidr& c);

// What an address is, for the egress policy. The order is the order of the checks.
enum class address_class : std::uint8_t {
  public_internet, // none of the below
  unspecified,     // 0.0.0.0/8, ::
  loopback,        // 127.0.0.0/8, ::1
  link_local,      // 169.254.0.0/16 (cloud metadata 169.254.169.254), fe80::/10
  multicast,       // 224.0.0.0/4, 255.255.255.255, ff00::/8
  reserved,        // 240.0.0.0/4 and the IETF protocol block 192.0.0.0/24
  private_range,   // 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), fc00::/7 (ULA)
  node,            // an address of this node (classify's `node` argument)
  sandbox,         // inside the node's sandbox range (other sandboxes, their host sides)
};
const char* to_string(address_class c);
// The class to_string names; nullopt for a name this version does not know.
std::optional<address_class> address_class_named(std::string_view name);

// What is known of the node when classifying: its own addresses and the block its
// sandboxes' links are numbered from.
struct node_addresses {
  std::vector<ip_address> own;
  std::vector<cidr> sandbox_ranges;
};

address_class classify(const ip_address& a, const node_addresses& node);

} // namespace sandboxd::network
