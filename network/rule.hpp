// rule — one entry of a sandbox's network allow list: a destination by name or address
// block, with ports and a protocol. Pure: parsing, the canonical text, and matching.
//
// Text form (what `sandboxctl create --allow` and the API take, and what events keep):
//   [tcp://|udp://] DEST [:PORTS]
//   DEST  = a DNS name ("api.github.com"), "*." and a name (any name below it, not the
//           name itself), an address block ("10.0.0.0/8", "2001:db8::/32") or an address;
//           an IPv6 block with ports is bracketed: "[2001:db8::/32]:443"
//   PORTS = a port, a range "8000-8999", or a comma-separated list of them; none: every port
// Names are compared case-insensitively without a trailing dot; the canonical text is
// lower-case, with tcp:// left out. A name rule never makes a private or host address
// reachable (a name that resolves to one is denied: DNS rebinding); only an address block
// does that (policy.hpp).
#pragma once

#include "base/result.hpp"
#include "network/address.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::network {

enum class protocol : std::uint8_t { tcp, udp };
const char* to_string(protocol p);

struct port_range {
  std::uint16_t first = 1;
  std::uint16_t last = 65535;
  bool operator==(const port_range&) const = default;
};

struct rule {
  network::protocol protocol = network::protocol::tcp;
  std::string name;              // lower-case, no trailing dot; "" for an address block
  bool wildcard = false;         // "*." + name: the names below `name`
  std::optional<cidr> block;     // set for an address block
  std::vector<port_range> ports; // empty: every port
  bool operator==(const rule&) const = default;
};

// invalid_argument naming the rule and what is wrong with it.
result<rule> parse_rule(std::string_view text);
std::string to_string(const rule& r);

// A DNS name as the rules compare it: lower-case, without one trailing dot; nullopt when it
// is not a host name (labels of letters, digits and '-', 1-63 bytes each, 253 in all).
std::optional<std::string> normal_name(std::string_view name);

bool matches_name(const rule& r, std::string_view normal);
bool matches_port(const rule& r, std::uint16_t port);
// `inner` allows nothing that `outer` does not (for tenant ceilings).
bool covers(const rule& outer, const rule& inner);

} // namespace sandboxd::network
