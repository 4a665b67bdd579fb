#include "network/rule.hpp"

#include <algorithm>

namespace sandboxd::network {
namespace {

error bad_rule(std::string_view text, const std::string& why) {
  return make_error(errc::invalid_argument,
                    "network rule '" + std::string(text) + "' is invalid: " + why +
                      "; write NAME, *.NAME, CIDR or an address, optionally with :PORTS and "
                      "a udp:// prefix (docs/network.md)");
}

bool parse_port(std::string_view s, std::uint16_t& out) {
  if (s.empty() || s.size() > 5)
    return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + unsigned(c - '0');
  }
  if (v == 0 || v > 65535)
    return false;
  out = std::uint16_t(v);
  return true;
}

bool parse_ports(std::string_view s, std::vector<port_range>& out) {
  while (true) {
    auto comma = s.find(',');
    auto item = s.substr(0, comma);
    auto dash = item.find('-');
    port_range r;
    if (dash == std::string_view::npos) {
      if (!parse_port(item, r.first))
        return false;
      r.last = r.first;
    } else if (!parse_port(item.substr(0, dash), r.first) ||
               !parse_port(item.substr(dash + 1), r.last) || r.last < r.first) {
      return false;
    }
    out.push_back(r);
    if (comma == std::string_view::npos)
      break;
    s = s.substr(comma + 1);
  }
  if (out.size() > 64)
    return false;
  std::sort(out.begin(), out.end(),
            [](const port_range& a, const port_range& b) { return a.first < b.first; });
  return true;
}

// A port suffix: everything after the last ':' when it is made of digits, ',' and '-'.
bool split_ports(std::string_view s, std::string_view& dest, std::string_view& ports) {
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos)
    return false;
  auto tail = s.substr(colon + 1);
  if (tail.empty() || tail.find_first_not_of("0123456789,-") != std::string_view::npos)
    return false;
  dest = s.substr(0, colon);
  ports = tail;
  return true;
}

} // namespace

const char* to_string(protocol p) {
  return p == protocol::udp ? "udp" : "tcp";
}

std::optional<std::string> normal_name(std::string_view name) {
  if (!name.empty() && name.back() == '.')
    name.remove_suffix(1);
  if (name.empty() || name.size() > 253)
    return std::nullopt;
  std::string out;
  out.reserve(name.size());
  std::size_t label = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '.') {
      if (label == 0 || out.back() == '-')
        return std::nullopt;
      label = 0;
      out.push_back(c);
      continue;
    }
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && label > 0);
    if (!ok || ++label > 63)
      return std::nullopt;
    out.push_back(c);
  }
  if (out.back() == '-')
    return std::nullopt;
  return out;
}

result<rule> parse_rule(std::string_view text) {
  if (text.size() > 300)
    return bad_rule(text.substr(0, 40), "it is longer than 300 bytes");
  rule r;
  std::string_view s = text;
  if (s.starts_with("udp://")) {
    r.protocol = protocol::udp;
    s.remove_prefix(6);
  } else if (s.starts_with("tcp://")) {
    s.remove_prefix(6);
  } else if (s.find("://") != std::string_view::npos) {
    return bad_rule(text, "the only protocols are tcp:// (the default) and udp://");
  }
  if (s.empty())
    return bad_rule(text, "it names no destination");
  std::string_view dest = s, ports;
  if (s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos)
      return bad_rule(text, "'[' without ']'");
    dest = s.substr(1, close - 1);
    auto rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return bad_rule(text, "only :PORTS may follow ']'");
      ports = rest.substr(1);
      if (ports.empty())
        return bad_rule(text, "':' without ports");
    }
  } else if (auto whole = parse_cidr(s); whole.ok() && s.find(':') != std::string_view::npos &&
                                         s.find('.') == std::string_view::npos) {
    dest = s; // a bare IPv6 block or address: its colons are not a port
  } else {
    split_ports(s, dest, ports);
  }
  if (!ports.empty() && !parse_ports(ports, r.ports))
    return bad_rule(text, "ports are numbers 1-65535, ranges A-B or lists of them (at most 64)");
  bool looks_like_address = dest.find('/') != std::string_view::npos ||
                            dest.find(':') != std::string_view::npos ||
                            dest.find_first_not_of("0123456789.") == std::string_view::npos;
  if (looks_like_address) {
    auto c = parse_cidr(dest);
    if (!c)
      return bad_rule(text, "'" + std::string(dest) + "' is not an address or address block");
    r.block = *c;
    return r;
  }
  if (dest == "*")
    return bad_rule(text, "'*' alone allows every name: use network mode all instead");
  if (dest.starts_with("*.")) {
    r.wildcard = true;
    dest.remove_prefix(2);
  }
  auto n = normal_name(dest);
  if (!n)
    return bad_rule(text, "'" + std::string(dest) +
                            "' is not a host name (letters, digits, '-' and dots; a wildcard only "
                            "as a leading '*.')");
  r.name = *n;
  return r;
}

std::string to_string(const rule& r) {
  std::string out = r.protocol == protocol::udp ? "udp://" : "";
  bool v6 = r.block && r.block->base.family == family::v6;
  std::string dest;
  if (r.block) {
    unsigned full = r.block->base.family == family::v4 ? 32 : 128;
    dest = r.block->prefix == full ? to_string(r.block->base) : to_string(*r.block);
  } else {
    dest = (r.wildcard ? "*." : "") + r.name;
  }
  if (v6 && !r.ports.empty())
    out += "[" + dest + "]";
  else
    out += dest;
  for (std::size_t i = 0; i < r.ports.size(); ++i) {
    out += i == 0 ? ":" : ",";
    out += std::to_string(r.ports[i].first);
    if (r.ports[i].last != r.ports[i].first)
      out += "-" + std::to_string(r.ports[i].last);
  }
  return out;
}

bool matches_name(const rule& r, std::string_view n) {
  if (r.block || r.name.empty())
    return false;
  if (!r.wildcard)
    return n == r.name;
  return n.size() > r.name.size() + 1 && n.ends_with(r.name) &&
         n[n.size() - r.name.size() - 1] == '.';
}

bool matches_port(const rule& r, std::uint16_t port) {
  if (r.ports.empty())
    return true;
  for (const auto& p : r.ports)
    if (port >= p.first && port <= p.last)
      return true;
  return false;
}

bool covers(const rule& outer, const rule& inner) {
  if (outer.protocol != inner.protocol)
    return false;
  if (!outer.ports.empty()) {
    if (inner.ports.empty())
      return false;
    for (const auto& p : inner.ports) {
      bool in = false;
      for (const auto& o : outer.ports)
        in = in || (p.first >= o.first && p.last <= o.last);
      if (!in)
        return false;
    }
  }
  if (outer.block || inner.block) {
    if (!outer.block || !inner.block)
      return false;
    return outer.block->base.family == inner.block->base.family &&
           outer.block->prefix <= inner.block->prefix && outer.block->contains(inner.block->base);
  }
  if (!outer.wildcard)
    return !inner.wildcard && inner.name == outer.name;
  // *.a covers b.a and *.b.a, not a itself.
  return matches_name(outer, inner.name);
}

} // namespace sandboxd::network
