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
  const std::string proxy = std::to_string(p.proxy_port);
  const std::string dns = std::to_string(p.dns_port);
  const std::string drop =
    p.log_group ? "log group " + std::to_string(p.log_group) + " prefix \"sandboxd-deny\" drop"
                : std::string("drop");
  std::string s;
  // "add" then "flush": the table exists whether or not it did before, and is empty.
  s += "add table " + t + "\n";
  s += "flush table " + t + "\n";
  s += "table " + t + " {\n";
  s += "  set link_hosts { type ifname . ipv4_addr; }\n";
  s += "  set link_sources { type ifname . ipv4_addr; }\n";
  s += "  chain prerouting {\n";
  s += "    type nat hook prerouting priority dstnat; policy accept;\n";
  s += "    iifname \"sx*\" udp dport 53 redirect to :" + dns + "\n";
  s += "    iifname \"sx*\" tcp dport 53 redirect to :" + dns + "\n";
  s += "    iifname \"sx*\" meta l4proto tcp redirect to :" + proxy + "\n";
  s += "  }\n";
  s += "  chain input {\n";
  s += "    type filter hook input priority filter; policy accept;\n";
  s += "    iifname \"sx*\" meta nfproto ipv6 " + drop + "\n";
  s += "    iifname \"sx*\" iifname . ip saddr != @link_sources " + drop + "\n";
  s += "    iifname \"sx*\" iifname . ip daddr != @link_hosts " + drop + "\n";
  s += "    iifname \"sx*\" ct state established,related accept\n";
  s += "    iifname \"sx*\" tcp dport { " + proxy + ", " + dns + " } accept\n";
  s += "    iifname \"sx*\" udp dport " + dns + " accept\n";
  s += "    iifname \"sx*\" " + drop + "\n";
  s += "  }\n";
  s += "  chain forward {\n";
  s += "    type filter hook forward priority filter; policy accept;\n";
  s += "    iifname \"sx*\" " + drop + "\n";
  s += "    oifname \"sx*\" drop\n";
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
