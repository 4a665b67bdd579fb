#include "node/listen_address.hpp"

#include <arpa/inet.h>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <sys/un.h>

namespace sandboxd::node {
namespace {

listen_address_result fail(std::string message) {
  listen_address_result r;
  r.failure = events::make_error(events::errc::invalid_argument, std::move(message));
  return r;
}

bool valid_hostname(std::string_view h) {
  if (h.empty() || h.size() > 253)
    return false;
  for (char c : h)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-'))
      return false;
  return h.front() != '-' && h.front() != '.';
}

listen_address_result parse_tcp(std::string_view text, std::string_view shown) {
  const std::string expected =
    "; expected tcp:HOST:PORT (e.g. tcp:127.0.0.1:7000 or tcp:[::1]:7000)";
  std::string_view host, port;
  bool v6 = false;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return fail("listen address \"" + std::string(shown) + "\" has an unclosed IPv6 bracket" +
                  expected);
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    v6 = true;
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return fail("listen address \"" + std::string(shown) + "\" has no port" + expected);
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return fail("listen address \"" + std::string(shown) + "\": write an IPv6 host in brackets" +
                  expected);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 ||
      value > 65535)
    return fail("listen address \"" + std::string(shown) + "\": port \"" + std::string(port) +
                "\" is not a number from 1 to 65535" + expected);
  const std::string h(host);
  in6_addr a6{};
  if (v6 ? ::inet_pton(AF_INET6, h.c_str(), &a6) != 1 : !valid_hostname(host))
    return fail("listen address \"" + std::string(shown) + "\": \"" + h +
                "\" is not a host name or address" + expected);
  listen_address a;
  a.type = listen_address::kind::tcp;
  a.host = h;
  a.port = static_cast<std::uint16_t>(value);
  listen_address_result r;
  r.value = a;
  return r;
}

} // namespace

bool listen_address::loopback() const {
  if (type == kind::unix_socket)
    return true;
  if (host == "localhost" || host == "::1")
    return true;
  in_addr a{};
  return ::inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string listen_address::to_string() const {
  if (type == kind::unix_socket)
    return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp:" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

listen_address_result parse_listen_address(std::string_view text) {
  if (text.rfind("unix:", 0) == 0) {
    const std::string_view p = text.substr(5);
    if (p.empty())
      return fail("listen address \"" + std::string(text) +
                  "\" has no path; expected unix:PATH (e.g. unix:/var/lib/sandboxd/sandboxd.sock)");
    if (p.find('\0') != std::string_view::npos)
      return fail("listen address path holds a NUL byte");
    listen_address a;
    a.path = std::filesystem::absolute(std::string(p)).lexically_normal().string();
    if (a.path.size() >= sizeof(sockaddr_un::sun_path))
      return fail("listen address " + a.path + " is " + std::to_string(a.path.size()) +
                  " bytes long; a unix socket path holds at most " +
                  std::to_string(sizeof(sockaddr_un::sun_path) - 1) + ": choose a shorter one");
    listen_address_result r;
    r.value = a;
    return r;
  }
  if (text.rfind("tcp:", 0) == 0)
    return parse_tcp(text.substr(4), text);
  return fail("listen address \"" + std::string(text) +
              "\" must start with unix: or tcp: (unix:PATH, tcp:HOST:PORT)");
}

listen_address_result parse_tcp_endpoint(std::string_view text) {
  return parse_tcp(text.rfind("tcp:", 0) == 0 ? text.substr(4) : text, text);
}

} // namespace sandboxd::node
