// client_hello — TLS ClientHello bytes built by hand for the tests: a server_name extension,
// a minimal hello message with given extensions, and the message cut into handshake records.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::test::tls {

using bytes = std::vector<std::uint8_t>;

inline void put16(bytes& b, std::size_t v) {
  b.push_back(std::uint8_t(v >> 8));
  b.push_back(std::uint8_t(v));
}

// A server_name extension with these host_name entries.
inline bytes sni_extension(const std::vector<std::string>& names) {
  bytes list;
  for (const auto& n : names) {
    list.push_back(0);
    put16(list, n.size());
    list.insert(list.end(), n.begin(), n.end());
  }
  bytes e;
  put16(e, 0);
  put16(e, list.size() + 2);
  put16(e, list.size());
  e.insert(e.end(), list.begin(), list.end());
  return e;
}

// A minimal ClientHello handshake message with these extensions (none: no extensions block).
inline bytes hello_message(const std::vector<bytes>& extensions, bool with_block = true) {
  bytes body = {0x03, 0x03};
  body.insert(body.end(), 32, 0xab); // random
  body.push_back(0);                 // session id
  put16(body, 2);
  body.push_back(0x13);
  body.push_back(0x01);
  body.push_back(1); // compression: null
  body.push_back(0);
  if (with_block) {
    bytes all;
    for (const auto& e : extensions)
      all.insert(all.end(), e.begin(), e.end());
    put16(body, all.size());
    body.insert(body.end(), all.begin(), all.end());
  }
  bytes m = {1, std::uint8_t(body.size() >> 16), std::uint8_t(body.size() >> 8),
             std::uint8_t(body.size())};
  m.insert(m.end(), body.begin(), body.end());
  return m;
}

// `message` in handshake records of at most `piece` bytes each.
inline bytes records(const bytes& message, std::size_t piece = 16384, std::uint8_t type = 22) {
  bytes out;
  for (std::size_t at = 0; at < message.size(); at += piece) {
    std::size_t n = std::min(piece, message.size() - at);
    out.push_back(type);
    out.push_back(3);
    out.push_back(1);
    put16(out, n);
    out.insert(out.end(), message.begin() + long(at), message.begin() + long(at + n));
  }
  return out;
}

} // namespace sandboxd::test::tls
