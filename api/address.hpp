// address — the addresses sandboxd listens on and clients connect to.
//
//   unix:PATH         a unix socket (PATH absolute or relative)
//   tcp:HOST:PORT     TCP; HOST a name, an IPv4 address or [IPv6]; PORT 0 = any free port
//
// A TCP address is loopback when HOST is "localhost", in 127.0.0.0/8 or "[::1]"; the server
// uses TLS on every other TCP address.
#pragma once

#include "api/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace sandboxd::api {

struct address {
  enum class kind { unix_socket, tcp } type = kind::unix_socket;
  std::string path; // unix
  std::string host; // tcp, without brackets
  std::uint16_t port = 0;

  bool loopback() const;
  // The form kj's network parser takes: "unix:PATH" or "HOST:PORT" ("[v6]:PORT").
  std::string kj_form() const;
  std::string str() const; // the form parse() reads
};

result<address> parse_address(std::string_view text);

} // namespace sandboxd::api
