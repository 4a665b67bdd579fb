// sandbox_link — a sandbox's own network namespace and the veth pair that joins it to the
// host: the only way out of a sandbox that has a network (docs/network.md "Links"). What
// may pass over it is decided on the host side (network/), never inside the sandbox.
//
// Link slot n of a driver's link range (an IPv4 block) is the /30 at base + 4n: the host
// side is .1 (interface "sx" + 6 hex digits of the node's link instance + 5 of the /30's
// number, so that every link of one node starts with the same prefix and two drivers with
// disjoint ranges never share a name), the sandbox side .2 (interface eth0 inside), with
// the default route through the host side. IPv6: the sandbox side has fd73:6278::/96 + its
// IPv4 address and a default route through the host side's fe80::1, so that an IPv6
// attempt reaches the host, where the egress rules refuse it and say so (an IPv6 packet is
// never relayed). The namespace is a bind mount at <data_dir>/netns/<id>: it outlives the
// sandbox's processes (a filesystem pause, a restart of sandboxd) until remove_link. The
// host side has strict reverse-path filtering (a sandbox cannot send as another address),
// no IPv6 autoconfiguration and no forwarding of its own: nothing reaches further than the
// host side unless network/ relays it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sandboxd::runtime {

struct link_range {
  std::uint32_t base = 0; // host order; the block's first address
  std::uint8_t prefix = 32;
  std::uint32_t slots() const { return prefix > 30 ? 0 : 1u << (30 - prefix); }
};

// "10.200.0.0/16": an IPv4 block of at least one /30, host bits zero; nullopt otherwise.
std::optional<link_range> parse_link_range(const std::string& text);

struct sandbox_link {
  std::uint32_t slot = 0;
  std::string netns_path;       // the bind-mounted namespace
  std::string host_interface;   // "sx...": the host side
  std::string host_address;     // "10.200.0.1": where the sandbox's proxy and resolver listen
  std::string sandbox_address;  // "10.200.0.2"
  std::string sandbox_address6; // "fd73:6278::ac8:2"
  std::uint8_t prefix = 30;
};

// The interface prefix of the links of node instance `instance` ("sx" + its first 6 bytes).
std::string link_interface_prefix(const std::string& instance);

// The link of slot `slot` (below range.slots()) for node instance `instance`.
sandbox_link link_of(const link_range& range, std::uint32_t slot, const std::string& instance,
                     const std::string& netns_path);

// Makes the namespace, the veth pair, the addresses and the route; what an earlier attempt
// left of them is removed first. Throws std::runtime_error naming the step that failed.
void make_link(const sandbox_link& link);
// Removes the veth pair (its sandbox side goes with it) and the namespace; what is missing
// is no error.
void remove_link(const sandbox_link& link);
// Whether the namespace is mounted and its host side present.
bool link_present(const sandbox_link& link);

} // namespace sandboxd::runtime
