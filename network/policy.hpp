// policy — a sandbox's egress policy and the verdict on one destination. Pure: the sandbox's
// actor decides every connection with `evaluate` on the policy in its own state (so replaying
// the log reproduces every verdict); the proxy and the resolver supply the facts.
//
// Modes (events::network_mode): none (loopback only: everything is denied), allow_list
// (what a rule allows), all (every public address, and what a rule allows besides).
// Whatever the mode and the rules:
// - unspecified, loopback, link-local (cloud metadata 169.254.169.254 among them),
//   multicast and reserved addresses, the node's own addresses and the sandbox range are
//   never reachable;
// - a private address (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) is reachable only
//   through an address-block rule that covers it — never through a name, so a name that
//   resolves to one (DNS rebinding) is denied;
// - a name rule allows an address only when sandboxd's resolver answered that address for
//   the name (`destination::name_resolves`): a forged Host, SNI or CONNECT name for an
//   address of another name is denied.
#pragma once

#include "base/result.hpp"
#include "events/event.hpp"
#include "network/address.hpp"
#include "network/rule.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::network {

inline constexpr std::size_t k_max_rules = 256;

struct policy {
  events::network_mode mode = events::network_mode::none;
  std::vector<rule> rules;
};

// The policy of an event's network_policy: every rule parsed (invalid_argument naming the
// first bad one), at most k_max_rules, none in mode none.
result<policy> compile(const events::network_policy& p);
// The event form, rules in canonical text.
events::network_policy to_event(const policy& p);

// What is known of one attempt to reach something from a sandbox.
struct destination {
  network::protocol protocol = network::protocol::tcp;
  // The name the sandbox asked for (TLS SNI, HTTP Host, CONNECT target, DNS question), in
  // normal form (rule.hpp's normal_name); "" when it named only an address.
  std::string name;
  std::optional<ip_address> address; // to be dialled; none for a DNS question
  std::uint16_t port = 0;
  address_class klass = address_class::public_internet; // classify(*address, node)
  bool name_resolves = false; // sandboxd's resolver answered `address` for `name`
};

struct verdict {
  bool allowed = false;
  std::string rule;   // the rule that allowed it (canonical text), or "all" for mode all
  std::string reason; // denied: why, and what would allow it
};

verdict evaluate(const policy& p, const destination& d);

// A tenant's ceiling: the widest mode it may ask for, and (when not empty) the rules its
// allow lists must stay within.
struct ceiling {
  events::network_mode widest = events::network_mode::full;
  std::vector<rule> within; // empty: any rule
};
// permission_denied naming the tenant, what it asked for and its ceiling.
result<void> check_ceiling(const policy& p, const ceiling& c, const std::string& tenant);

} // namespace sandboxd::network
