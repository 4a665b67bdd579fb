#include "network/http_head.hpp"

#include "network/rule.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace sandboxd::network {
namespace {

http_head bad(std::string problem) {
  http_head h;
  h.status = first_bytes_status::malformed;
  h.problem = std::move(problem);
  return h;
}

// RFC 9110 §5.6.2.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

std::string shown(std::string_view s) {
  std::string out(s.substr(0, 80));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      c = '?';
  return out;
}

struct authority {
  std::string host; // normal name, or "" for an address
  std::optional<ip_address> address;
  std::optional<std::uint16_t> port;
  bool same_host(const authority& o) const { return host == o.host && address == o.address; }
};

// host [":" port], host a reg-name, an IPv4 address or "[" IPv6 "]" (RFC 3986 §3.2.2); no
// userinfo, no path.
std::optional<authority> parse_authority(std::string_view text, std::string& problem) {
  if (text.find_first_of("@/?#\\ \t") != std::string_view::npos) {
    problem = "'" + shown(text) + "' is not a bare host and port";
    return std::nullopt;
  }
  std::string_view host = text, port;
  bool has_port = false;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos) {
      problem = "'" + shown(text) + "' has an unclosed '['";
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) {
      problem = "'" + shown(text) + "' has bytes after its ']'";
      return std::nullopt;
    }
    has_port = !rest.empty();
    if (has_port)
      port = rest.substr(1);
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    has_port = true;
    if (host.find(':') != std::string_view::npos) {
      problem = "'" + shown(text) + "' is an IPv6 address without brackets";
      return std::nullopt;
    }
  }
  authority a;
  if (text.starts_with('[')) {
    a.address = parse_address(host);
    if (!a.address || a.address->family != family::v6) {
      problem = "'" + shown(host) + "' is not an IPv6 address";
      return std::nullopt;
    }
  } else if (auto v4 = parse_address(host); v4 && v4->family == family::v4) {
    a.address = v4;
  } else if (auto name = normal_name(host)) {
    a.host = *name;
  } else {
    problem = "'" + shown(host) + "' is not a host name";
    return std::nullopt;
  }
  if (has_port) {
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      problem = "'" + shown(text) + "' has no valid port";
      return std::nullopt;
    }
    unsigned long n = std::stoul(std::string(port));
    if (n == 0 || n > 65535) {
      problem = "'" + shown(text) + "' has no valid port";
      return std::nullopt;
    }
    a.port = std::uint16_t(n);
  }
  return a;
}

// The first bytes could still be a request line ("METHOD SP"); false when they cannot.
bool could_be_request(std::string_view s) {
  std::size_t i = 0;
  for (; i < s.size() && i < 32; ++i) {
    if (s[i] == ' ')
      return i > 0;
    if (!is_tchar(s[i]))
      return false;
  }
  return i == s.size();
}

} // namespace

http_head read_http_head(std::span<const std::uint8_t> bytes) {
  std::string_view s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!could_be_request(s)) {
    http_head h;
    h.status = first_bytes_status::other;
    return h;
  }
  auto end = s.find("\r\n\r\n");
  auto examined = end == std::string_view::npos ? s : s.substr(0, end + 4);
  for (std::size_t i = 0; i < examined.size(); ++i) {
    if (examined[i] == '\n' && (i == 0 || examined[i - 1] != '\r'))
      return bad("a line ends in a bare LF");
    if (examined[i] == '\r' && i + 1 < examined.size() && examined[i + 1] != '\n')
      return bad("a bare CR inside a line");
    if (examined[i] == '\0')
      return bad("a NUL byte in the request head");
  }
  if (end == std::string_view::npos) {
    if (s.size() >= k_first_bytes_limit)
      return bad("a request head longer than " + std::to_string(k_first_bytes_limit) + " bytes");
    return {};
  }
  if (end + 4 > k_first_bytes_limit)
    return bad("a request head longer than " + std::to_string(k_first_bytes_limit) + " bytes");

  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < end + 2;) {
    auto eol = s.find("\r\n", at);
    lines.push_back(s.substr(at, eol - at));
    at = eol + 2;
  }
  // The request line: method SP target SP version.
  auto line = lines.front();
  auto sp1 = line.find(' ');
  auto sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return bad("the request line '" + shown(line) + "' is not METHOD TARGET VERSION");
  http_head h;
  h.method = std::string(line.substr(0, sp1));
  auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  auto version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return bad("the version '" + shown(version) + "' is not HTTP/1.0 or HTTP/1.1");
  h.connect = h.method == "CONNECT";

  std::vector<std::string_view> hosts;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto l = lines[i];
    if (l.starts_with(' ') || l.starts_with('\t'))
      return bad("a header folded over two lines");
    auto colon = l.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return bad("the header line '" + shown(l) + "' has no name");
    auto name = l.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_tchar))
      return bad("the header name '" + shown(name) + "' is not a token");
    auto value = l.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
      value.remove_suffix(1);
    if (equal_ignoring_case(name, "host"))
      hosts.push_back(value);
  }
  if (hosts.size() > 1)
    return bad("the request has " + std::to_string(hosts.size()) + " Host headers");

  std::string problem;
  std::optional<authority> from_target;
  if (h.connect) {
    from_target = parse_authority(target, problem);
    if (!from_target)
      return bad("the CONNECT target: " + problem);
    if (!from_target->port)
      return bad("the CONNECT target '" + shown(target) + "' has no port");
  } else if (auto scheme = target.find("://");
             scheme != std::string_view::npos && !target.starts_with('/')) {
    auto name = target.substr(0, scheme);
    if (!equal_ignoring_case(name, "http"))
      return bad("the target's scheme '" + shown(name) + "' is not http");
    auto rest = target.substr(scheme + 3);
    auto auth = rest.substr(0, rest.find_first_of("/?#"));
    from_target = parse_authority(auth, problem);
    if (!from_target)
      return bad("the target's authority: " + problem);
  } else if (!target.starts_with('/') && target != "*") {
    return bad("the target '" + shown(target) + "' is not a path, an absolute URI or '*'");
  }

  std::optional<authority> from_host;
  if (!hosts.empty()) {
    from_host = parse_authority(hosts.front(), problem);
    if (!from_host)
      return bad("the Host header: " + problem);
  }
  if (!from_target && !from_host)
    return bad("the request names no host (no Host header)");
  if (from_target && from_host &&
      (!from_target->same_host(*from_host) ||
       (from_host->port && from_target->port && *from_host->port != *from_target->port)))
    return bad("the Host header '" + shown(hosts.front()) + "' disagrees with the target '" +
               shown(target) + "'");
  const authority& a = from_target ? *from_target : *from_host;
  h.status = first_bytes_status::complete;
  h.host = a.host;
  h.address = a.address;
  h.port = a.port;
  h.head_length = end + 4;
  return h;
}

} // namespace sandboxd::network
