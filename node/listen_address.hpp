// listen_address — where the daemon listens: `unix:PATH` or `tcp:HOST:PORT`.
//
// PATH is absolute after parsing (relative to the working directory) and fits a unix
// socket address (at most 107 bytes). HOST is a name, a dotted IPv4 address or a
// bracketed IPv6 address ([::1]); PORT 1-65535. The RPC server binds them; a TCP address
// that is not loopback will need TLS there.
#pragma once

#include "events/errc.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandboxd::node {

struct listen_address {
  enum class kind { unix_socket, tcp };
  kind type = kind::unix_socket;
  std::string path; // unix_socket
  std::string host; // tcp; IPv6 without brackets
  std::uint16_t port = 0;

  bool loopback() const;         // a unix socket, localhost, 127.0.0.0/8 or ::1
  std::string to_string() const; // the form it was parsed from (path absolute)
  bool operator==(const listen_address&) const = default;
};

struct listen_address_result {
  std::optional<listen_address> value;
  std::optional<events::error> failure; // invalid_argument saying what form is expected
};

listen_address_result parse_listen_address(std::string_view text);

// A TCP endpoint alone: "HOST:PORT" or "tcp:HOST:PORT" (the metrics address).
listen_address_result parse_tcp_endpoint(std::string_view text);

} // namespace sandboxd::node
