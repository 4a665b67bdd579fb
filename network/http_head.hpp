// http_head — the destination an HTTP/1.x request names, read from its head (RFC 9112): the
// Host header, the authority of an absolute-form target (a request to a proxy), or the
// authority of a CONNECT. The proxy allows or denies the connection by it.
//
// Refused as malformed (each a way to name one host to the proxy and another to the server):
// no Host or more than one (RFC 9112 §3.2), a Host that disagrees with an absolute-form or
// CONNECT target, a Host with userinfo or a path, a line folded over two (obs-fold), a bare
// LF or CR, a header name with a space before its colon, a head longer than
// k_first_bytes_limit, and a version other than HTTP/1.0 and HTTP/1.1.
#pragma once

#include "network/address.hpp"
#include "network/first_bytes.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace sandboxd::network {

struct http_head {
  first_bytes_status status = first_bytes_status::incomplete;
  std::string method;                // "GET", "CONNECT", ...
  bool connect = false;              // a CONNECT: the proxy answers it and tunnels
  std::string host;                  // a host name in normal form, or "" when it is an address
  std::optional<ip_address> address; // when the authority is an IP literal ("[::1]" unbracketed)
  std::optional<std::uint16_t> port; // when the authority names one
  std::size_t head_length = 0;       // bytes up to and with the blank line
  std::string problem;               // malformed: what is wrong
};

http_head read_http_head(std::span<const std::uint8_t> bytes);

} // namespace sandboxd::network
