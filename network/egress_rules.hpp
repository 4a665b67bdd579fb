// egress_rules — the nftables rules that make a sandbox's link lead only to sandboxd: one
// table per node (`inet sandboxd_<instance>`) over every link interface ("sx*",
// runtime/sandbox_link.hpp). Pure: egress_ruleset() is the text; nft_table (nft_table.hpp)
// loads it.
//
// From a link interface:
// - every TCP connection, whatever its address, is redirected to the egress proxy's port on
//   the link's own host side (the proxy reads the address dialled with SO_ORIGINAL_DST);
//   DNS (UDP and TCP port 53) to the resolver's port there;
// - only those two ports of the link's own host address are open; a packet to another
//   address of the node (another link's host side, the node's own addresses, loopback) or
//   from an address that is not the link's sandbox side is dropped;
// - nothing is forwarded, to or from a link: no packet crosses the node without the proxy;
// - what is dropped is first logged to netlink group `log_group` (NFLOG), so that a denied
//   UDP datagram, ICMP echo or IPv6 packet is seen, not just lost.
// Replies the proxy and resolver send (and exposed ports' traffic, which sandboxd starts)
// pass as established connections.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::network {

struct link_entry {
  std::string interface;       // "sx..."
  std::string host_address;    // IPv4
  std::string sandbox_address; // IPv4
};

struct egress_params {
  std::string table;            // "sandboxd_1a2b3c4d"
  std::uint16_t proxy_port = 0; // on every link's host side
  std::uint16_t dns_port = 0;
  std::uint16_t log_group = 0; // 0: drop without logging
};

// The whole table: `table inet T` made afresh (flushed, then filled), with `links` in its
// sets. Loading it again with other links replaces the sets' contents.
std::string egress_ruleset(const egress_params& p, const std::vector<link_entry>& links);
// Adding and removing one link's elements (an `nft -f` script).
std::string add_link_rules(const egress_params& p, const link_entry& l);
std::string remove_link_rules(const egress_params& p, const link_entry& l);
// Deletes the table.
std::string delete_ruleset(const egress_params& p);

} // namespace sandboxd::network
