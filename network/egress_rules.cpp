#include "network/egress_rules.hpp"

namespace sandboxd::network {
namespace {

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

std::string elements(const link_entry& l, bool source) {
  return quoted(l.interface) + " . " + (source ? l.sandbox_address : l.host_address);
}

} // namespace

std::string egress_ruleset(const egress_params& p, const std::vector<link_entry>& links) {
  const std::string t = "inet " + p.table;
  const std::string links_if = "iifname " + quoted(p.interface_prefix + "*");
  const std::string proxy = std::to_string(p.proxy_port);
  const std::string dns = std::to_string(p.dns_port);
  const std::string ports = "{ " + proxy + ", " + dns + " }";
  // IPv6 neighbour discovery, so that the sandbox's IPv6 attempts reach the host side (and
  // are refused there, loudly) instead of failing unseen inside.
  const std::string nd = "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert }";
  std::string s;
  // "add" then "delete": whether or not it existed, the old table (its sets' elements too)
  // goes, in the same transaction that makes the new one.
  s += "add table " + t + "\n";
  s += "delete table " + t + "\n";
  s += "table " + t + " {\n";
  s += "  set link_hosts { type ifname . ipv4_addr; }\n";
  s += "  set link_sources { type ifname . ipv4_addr; }\n";
  s += "  set refused_rate { type ifname; size 65535; flags dynamic,timeout; timeout 1m; }\n";
  // Before NAT: where a packet from a link may go at all.
  s += "  chain guard {\n";
  s += "    type filter hook prerouting priority -150; policy accept;\n";
  s += "    " + links_if + " jump from_link\n";
  s += "    fib daddr type local tcp dport " + ports + " drop\n";
  s += "    fib daddr type local udp dport " + dns + " drop\n";
  s += "  }\n";
  s += "  chain from_link {\n";
  s += "    " + nd + " accept\n";
  s += "    meta nfproto ipv4 iifname . ip saddr != @link_sources drop\n";
  s += "    ct state established,related accept\n";
  s += "    meta nfproto ipv6 jump refuse\n";
  s += "    meta l4proto tcp accept\n";
  s += "    udp dport 53 accept\n";
  s += "    jump refuse\n";
  s += "  }\n";
  s += "  chain refuse {\n";
  if (p.log_group)
    s += "    update @refused_rate { iifname limit rate " + std::to_string(p.log_per_second) +
         "/second burst " + std::to_string(p.log_per_second) + " packets } log group " +
         std::to_string(p.log_group) + " snaplen 128 prefix " + quoted(k_refused_log_prefix) + "\n";
  s += "    meta l4proto tcp reject with tcp reset\n";
  s += "    meta l4proto udp reject with icmpx port-unreachable\n";
  s += "    reject with icmpx admin-prohibited\n";
  s += "  }\n";
  s += "  chain to_sandboxd {\n";
  s += "    type nat hook prerouting priority dstnat; policy accept;\n";
  s += "    " + links_if + " meta nfproto ipv4 udp dport 53 redirect to :" + dns + "\n";
  s += "    " + links_if + " meta nfproto ipv4 tcp dport 53 redirect to :" + dns + "\n";
  s += "    " + links_if + " meta nfproto ipv4 meta l4proto tcp redirect to :" + proxy + "\n";
  s += "  }\n";
  s += "  chain input {\n";
  s += "    type filter hook input priority filter; policy accept;\n";
  s += "    " + links_if + " jump link_input\n";
  s += "  }\n";
  s += "  chain link_input {\n";
  s += "    " + nd + " accept\n";
  s += "    iifname . ip daddr != @link_hosts drop\n";
  s += "    ct state established,related accept\n";
  s += "    tcp dport " + ports + " accept\n";
  s += "    udp dport " + dns + " accept\n";
  s += "    drop\n";
  s += "  }\n";
  s += "  chain forward {\n";
  s += "    type filter hook forward priority filter; policy accept;\n";
  s += "    " + links_if + " drop\n";
  s += "    oifname " + quoted(p.interface_prefix + "*") + " drop\n";
  s += "  }\n";
  s += "}\n";
  for (const auto& l : links)
    s += add_link_rules(p, l);
  return s;
}

std::string add_link_rules(const egress_params& p, const link_entry& l) {
  const std::string t = "inet " + p.table;
  return "add element " + t + " link_hosts { " + elements(l, false) + " }\n" + "add element " + t +
         " link_sources { " + elements(l, true) + " }\n";
}

std::string remove_link_rules(const egress_params& p, const link_entry& l) {
  const std::string t = "inet " + p.table;
  return "delete element " + t + " link_hosts { " + elements(l, false) + " }\n" +
         "delete element " + t + " link_sources { " + elements(l, true) + " }\n";
}

std::string delete_ruleset(const egress_params& p) {
  return "delete table inet " + p.table + "\n";
}

} // namespace sandboxd::network
