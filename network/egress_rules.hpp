// egress_rules — the nftables table that makes a sandbox's link lead only to sandboxd: one
// table per node (`inet sandboxd_<instance>`) over every link interface of the node (their
// names start with one prefix, runtime/sandbox_link.hpp). Pure: egress_ruleset() is the
// text; nft_table (nft_table.hpp) loads it.
//
// From a link interface:
// - a packet whose source is not the link's own sandbox address is dropped (with strict
//   reverse-path filtering on the host side, a sandbox cannot send as another);
// - every TCP connection, whatever its address, is redirected to the egress proxy's port
//   on the link's own host side (the proxy reads the address dialled with SO_ORIGINAL_DST
//   and decides); DNS (UDP and TCP port 53, to any address) to the resolver's port there;
// - anything else — UDP to another port, ICMP, any other protocol, every IPv6 packet but
//   neighbour discovery — is refused at once (a TCP reset or an ICMP error, so the sandbox
//   does not wait) and logged to netlink group `log_group` (NFLOG), at most
//   `log_per_second` packets per link and second, so that sandboxd records the denial;
// - only those two ports of the link's own host address are open; nothing is forwarded,
//   to or from a link: no packet crosses the node without the proxy.
// From any other interface, the proxy's and the resolver's ports of the node's own
// addresses are closed: they serve links only.
// Replies to connections sandboxd itself opens toward a sandbox (exposed ports) pass as
// established connections.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::network {

struct link_entry {
  std::string interface;       // "sx..."
  std::string host_address;    // IPv4
  std::string sandbox_address; // IPv4
  bool operator==(const link_entry&) const = default;
};

struct egress_params {
  std::string table;            // "sandboxd_1a2b3c4d"
  std::string interface_prefix; // every link interface's name starts with it ("sx1a2b3c")
  std::uint16_t proxy_port = 0; // on every link's host side
  std::uint16_t dns_port = 0;
  std::uint16_t log_group = 0; // NFLOG group of refused packets; 0: refused without a log
  std::uint32_t log_per_second = 20;
};

// The whole table: `table inet T` made afresh (whatever was there before goes, set elements
// too), with `links` in its sets, as one transaction.
std::string egress_ruleset(const egress_params& p, const std::vector<link_entry>& links);
// Adding and removing one link's elements (an `nft -f` script).
std::string add_link_rules(const egress_params& p, const link_entry& l);
std::string remove_link_rules(const egress_params& p, const link_entry& l);
// Deletes the table (and so every rule above).
std::string delete_ruleset(const egress_params& p);

// The log prefix of refused packets (NFLOG's NFULA_PREFIX).
inline constexpr const char* k_refused_log_prefix = "sandboxd-refused";

} // namespace sandboxd::network
