#include "api/address.hpp"

#include <charconv>

namespace sandboxd::api {

bool address::loopback() const {
  if (type == kind::unix_socket)
    return true;
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string address::kj_form() const {
  if (type == kind::unix_socket)
    return "unix:" + path;
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string address::str() const {
  return type == kind::unix_socket ? "unix:" + path : "tcp:" + kj_form();
}

result<address> parse_address(std::string_view text) {
  const auto bad = [&](std::string why) {
    return make_error(errc::invalid_argument, "address '" + std::string(text) + "' " + why +
                                                "; use unix:PATH or tcp:HOST:PORT");
  };
  address a;
  if (text.rfind("unix:", 0) == 0) {
    a.path = std::string(text.substr(5));
    if (a.path.empty())
      return bad("names no socket path");
    return a;
  }
  if (text.rfind("tcp:", 0) != 0)
    return bad("has no known scheme");
  auto rest = text.substr(4);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return bad("has no HOST:PORT");
  auto host = rest.substr(0, colon);
  if (host.front() == '[') {
    if (host.back() != ']')
      return bad("has an unclosed [");
    host = host.substr(1, host.size() - 2);
  }
  const auto port = rest.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535)
    return bad("has no valid port");
  a.type = address::kind::tcp;
  a.host = std::string(host);
  a.port = static_cast<std::uint16_t>(value);
  return a;
}

} // namespace sandboxd::api
