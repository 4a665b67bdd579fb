// tls_hello — the server name a TLS connection asks for, read from the ClientHello in its
// first bytes (RFC 8446 §4.1.2, the server_name extension of RFC 6066 §3), without taking
// part in TLS. The ClientHello may span several handshake records; they are joined.
//
// Refused as malformed: a handshake that does not start with a ClientHello, lengths that
// disagree, more than one server_name extension or host_name entry, a name that is not a
// host name (rule.hpp's normal_name: an IP literal in SNI is not allowed by RFC 6066 either),
// and a ClientHello longer than k_first_bytes_limit.
#pragma once

#include "network/first_bytes.hpp"

#include <cstdint>
#include <span>
#include <string>

namespace sandboxd::network {

struct tls_hello {
  first_bytes_status status = first_bytes_status::incomplete;
  std::string server_name; // complete: in normal form; "" when the hello names none
  std::string problem;     // malformed: what is wrong, for the denial's reason
};

tls_hello read_tls_hello(std::span<const std::uint8_t> bytes);

} // namespace sandboxd::network
