#include "network/tls_hello.hpp"

#include "network/rule.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace sandboxd::network {
namespace {

constexpr std::uint8_t k_handshake_record = 22;
constexpr std::uint8_t k_client_hello = 1;
constexpr std::uint16_t k_server_name_extension = 0;
constexpr std::uint8_t k_host_name = 0;

tls_hello bad(std::string problem) {
  return {first_bytes_status::malformed, "", std::move(problem)};
}

// Reads big-endian integers and length-prefixed slices of one buffer; any read past its
// end sets `short_` and yields zeros, so a parser checks once per structure.
class reader {
public:
  explicit reader(std::span<const std::uint8_t> b) : b_(b) {}
  bool short_read() const { return short_; }
  bool empty() const { return pos_ == b_.size(); }
  std::size_t left() const { return b_.size() - pos_; }
  std::uint32_t number(int width) {
    if (left() < std::size_t(width)) {
      short_ = true;
      pos_ = b_.size();
      return 0;
    }
    std::uint32_t v = 0;
    for (int i = 0; i < width; ++i)
      v = (v << 8) | b_[pos_++];
    return v;
  }
  std::span<const std::uint8_t> slice(std::size_t n) {
    if (left() < n) {
      short_ = true;
      pos_ = b_.size();
      return {};
    }
    auto s = b_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::span<const std::uint8_t> prefixed(int width) { return slice(number(width)); }

private:
  std::span<const std::uint8_t> b_;
  std::size_t pos_ = 0;
  bool short_ = false;
};

// The server_name extension's body (RFC 6066 §3): a list of (type, name); at most one
// host_name.
tls_hello read_server_name(std::span<const std::uint8_t> body) {
  reader ext(body);
  reader list(ext.prefixed(2));
  if (ext.short_read() || !ext.empty())
    return bad("the server_name extension's length disagrees with its list");
  std::optional<std::string> found;
  while (!list.empty()) {
    auto type = list.number(1);
    auto name = list.prefixed(2);
    if (list.short_read())
      return bad("the server_name list is cut short");
    if (type != k_host_name)
      continue;
    if (found)
      return bad("the server_name extension names more than one host");
    std::string text(name.begin(), name.end());
    auto normal = normal_name(text);
    if (!normal || parse_address(text))
      return bad("the server name '" + text.substr(0, 64) + "' is not a host name");
    found = *normal;
  }
  if (!found)
    return bad("the server_name extension names no host");
  return {first_bytes_status::complete, *found, ""};
}

} // namespace

tls_hello read_tls_hello(std::span<const std::uint8_t> bytes) {
  // The handshake message, joined from the records that carry it.
  std::vector<std::uint8_t> handshake;
  std::size_t at = 0;
  std::optional<std::size_t> needed; // the whole message, with its 4-byte header
  while (!needed || handshake.size() < *needed) {
    if (at == bytes.size())
      return {};
    if (bytes[at] != k_handshake_record)
      return at == 0 ? tls_hello{first_bytes_status::other, "", ""}
                     : bad("a record other than a handshake record interrupts the ClientHello");
    if (bytes.size() - at < 5) {
      // A version other than 3.x is not TLS (SSL 2's first byte differs anyway).
      if (bytes.size() - at >= 2 && bytes[at + 1] != 3)
        return at == 0 ? tls_hello{first_bytes_status::other, "", ""}
                       : bad("a record's version is not TLS");
      return {};
    }
    if (bytes[at + 1] != 3)
      return at == 0 ? tls_hello{first_bytes_status::other, "", ""}
                     : bad("a record's version is not TLS");
    std::size_t length = (std::size_t(bytes[at + 3]) << 8) | bytes[at + 4];
    if (length == 0 || length > 16384)
      return bad("a handshake record of " + std::to_string(length) + " bytes");
    // The record's bytes so far: the handshake header may be known before the record is.
    std::size_t arrived = std::min(length, bytes.size() - at - 5);
    handshake.insert(handshake.end(), bytes.begin() + long(at + 5),
                     bytes.begin() + long(at + 5 + arrived));
    if (!needed && handshake.size() >= 4) {
      if (handshake[0] != k_client_hello)
        return bad("the first handshake message is not a ClientHello");
      needed =
        4 + ((std::size_t(handshake[1]) << 16) | (std::size_t(handshake[2]) << 8) | handshake[3]);
      if (*needed > k_first_bytes_limit)
        return bad("a ClientHello of " + std::to_string(*needed) + " bytes");
    }
    if (arrived < length)
      return {};
    at += 5 + length;
  }
  if (handshake.size() != *needed)
    return bad("the ClientHello's records carry more than the ClientHello");

  reader hello(std::span<const std::uint8_t>(handshake).subspan(4));
  hello.number(2);   // legacy_version
  hello.slice(32);   // random
  hello.prefixed(1); // legacy_session_id
  hello.prefixed(2); // cipher_suites
  hello.prefixed(1); // legacy_compression_methods
  if (hello.short_read())
    return bad("the ClientHello is cut short");
  if (hello.empty()) // no extensions at all (TLS 1.2 allows it): no name
    return {first_bytes_status::complete, "", ""};
  reader extensions(hello.prefixed(2));
  if (hello.short_read() || !hello.empty())
    return bad("the ClientHello's extensions disagree with its length");
  std::optional<tls_hello> named;
  while (!extensions.empty()) {
    auto type = extensions.number(2);
    auto body = extensions.prefixed(2);
    if (extensions.short_read())
      return bad("an extension is cut short");
    if (type != k_server_name_extension)
      continue;
    if (named)
      return bad("the ClientHello has more than one server_name extension");
    named = read_server_name(body);
    if (named->status != first_bytes_status::complete)
      return *named;
  }
  return named ? *named : tls_hello{first_bytes_status::complete, "", ""};
}

} // namespace sandboxd::network
