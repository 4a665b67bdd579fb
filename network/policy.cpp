#include "network/policy.hpp"

namespace sandboxd::network {
namespace {

int width(events::network_mode m) {
  switch (m) {
  case events::network_mode::none:
    return 0;
  case events::network_mode::allow_list:
    return 1;
  case events::network_mode::full:
    return 2;
  }
  return 3; // a mode this version does not know is wider than any it does
}

std::string what(const destination& d) {
  std::string out = to_string(d.protocol);
  out += " ";
  if (!d.name.empty())
    out += d.name;
  if (d.address) {
    out += d.name.empty() ? "" : " (";
    out +=
      d.address->family == family::v6 ? "[" + to_string(*d.address) + "]" : to_string(*d.address);
    out += ":" + std::to_string(d.port);
    out += d.name.empty() ? "" : ")";
  }
  return out;
}

verdict deny(std::string reason) {
  return verdict{false, "", std::move(reason)};
}

verdict allow(const rule& r) {
  return verdict{true, to_string(r), ""};
}

} // namespace

result<policy> compile(const events::network_policy& e) {
  policy p;
  p.mode = e.mode;
  if (width(e.mode) > 2)
    return make_error(errc::invalid_argument, "network mode " + events::to_string(e.mode) +
                                                " is unknown to this node; use none, "
                                                "allowlist or all");
  if (e.mode == events::network_mode::none && !e.allowed_hosts.empty())
    return make_error(errc::invalid_argument,
                      "network mode none allows nothing, so it takes no rules; use mode "
                      "allowlist for the rules given");
  if (e.allowed_hosts.size() > k_max_rules)
    return make_error(errc::invalid_argument,
                      "a network policy has at most " + std::to_string(k_max_rules) +
                        " rules; this one has " + std::to_string(e.allowed_hosts.size()) +
                        " (use wildcards or address blocks)");
  for (const auto& text : e.allowed_hosts) {
    auto r = parse_rule(text);
    if (!r)
      return r.err();
    p.rules.push_back(std::move(*r));
  }
  return p;
}

events::network_policy to_event(const policy& p) {
  events::network_policy e;
  e.mode = p.mode;
  for (const auto& r : p.rules)
    e.allowed_hosts.push_back(to_string(r));
  return e;
}

verdict evaluate(const policy& p, const destination& d) {
  if (p.mode == events::network_mode::none)
    return deny(what(d) + " denied: the sandbox's network is none (set a policy with "
                          "`sandboxctl network set`)");
  if (width(p.mode) > 2)
    return deny(what(d) + " denied: network mode " + events::to_string(p.mode) +
                " is unknown to this node");
  auto fits = [&](const rule& r) {
    return r.protocol == d.protocol && (d.address ? matches_port(r, d.port) : true);
  };
  if (!d.address) { // a DNS question: is the name allowed at all?
    if (p.mode == events::network_mode::full)
      return verdict{true, "all", ""};
    for (const auto& r : p.rules)
      if (!r.block && matches_name(r, d.name))
        return allow(r);
    return deny("name " + d.name + " is not in the sandbox's allow list");
  }
  switch (d.klass) {
  case address_class::public_internet:
    break;
  case address_class::private_range:
    for (const auto& r : p.rules)
      if (r.block && fits(r) && r.block->contains(*d.address))
        return allow(r);
    return deny(what(d) + " denied: " + to_string(*d.address) +
                " is a private address, reachable only through an address-block rule that "
                "covers it (a name never makes one reachable)");
  default:
    return deny(what(d) + " denied: " + to_string(*d.address) + " is a " + to_string(d.klass) +
                " address, never reachable from a sandbox");
  }
  for (const auto& r : p.rules)
    if (r.block && fits(r) && r.block->contains(*d.address))
      return allow(r);
  if (p.mode == events::network_mode::full)
    return verdict{true, "all", ""};
  if (d.name.empty())
    return deny(what(d) + " denied: no rule allows this address; allow its name or an "
                          "address block");
  for (const auto& r : p.rules) {
    if (r.block || !fits(r) || !matches_name(r, d.name))
      continue;
    if (!d.name_resolves)
      return deny(what(d) + " denied: sandboxd's resolver did not answer " + to_string(*d.address) +
                  " for " + d.name +
                  " (a Host, SNI or CONNECT name that is not the address dialled)");
    return allow(r);
  }
  return deny(what(d) + " denied: " + d.name + " is not in the sandbox's allow list" +
              (d.protocol == protocol::udp ? " for udp" : "") +
              (p.rules.empty() ? "" : " on port " + std::to_string(d.port)));
}

result<void> check_ceiling(const policy& p, const ceiling& c, const std::string& tenant) {
  if (width(p.mode) > width(c.widest))
    return make_error(errc::permission_denied,
                      "tenant " + tenant + " may use network modes up to " +
                        (c.widest == events::network_mode::allow_list
                           ? std::string("allowlist")
                           : events::to_string(c.widest)) +
                        "; ask the operator to raise its ceiling, or use an allow list");
  if (c.within.empty())
    return {};
  if (p.mode == events::network_mode::full)
    return make_error(errc::permission_denied,
                      "tenant " + tenant +
                        " may reach only the destinations of its ceiling; network mode all "
                        "is above it");
  for (const auto& r : p.rules) {
    bool ok = false;
    for (const auto& o : c.within)
      ok = ok || covers(o, r);
    if (!ok)
      return make_error(errc::permission_denied,
                        "network rule " + to_string(r) + " is outside the ceiling of tenant " +
                          tenant + "; the operator allows only destinations within its list");
  }
  return {};
}

} // namespace sandboxd::network
