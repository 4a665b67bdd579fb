#include "network/address.hpp"

#include <arpa/inet.h>
#include <cstring>

namespace sandboxd::network {
namespace {

bool in_v4(const ip_address& a, std::uint32_t base, int prefix) {
  std::uint32_t v = (std::uint32_t(a.bytes[0]) << 24) | (std::uint32_t(a.bytes[1]) << 16) |
                    (std::uint32_t(a.bytes[2]) << 8) | a.bytes[3];
  std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t(0) << (32 - prefix);
  return (v & mask) == (base & mask);
}

bool prefix_equal(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b,
                  int prefix) {
  int whole = prefix / 8;
  if (std::memcmp(a.data(), b.data(), whole) != 0)
    return false;
  int rest = prefix % 8;
  if (rest == 0)
    return true;
  std::uint8_t mask = std::uint8_t(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

bool host_bits_zero(const ip_address& a, int prefix) {
  int bits = a.family == family::v4 ? 32 : 128;
  for (int i = prefix; i < bits; ++i)
    if (a.bytes[i / 8] & (0x80 >> (i % 8)))
      return false;
  return true;
}

} // namespace

ip_address ip_address::v4(std::uint32_t h) {
  ip_address a;
  a.family = family::v4;
  a.bytes[0] = std::uint8_t(h >> 24);
  a.bytes[1] = std::uint8_t(h >> 16);
  a.bytes[2] = std::uint8_t(h >> 8);
  a.bytes[3] = std::uint8_t(h);
  return a;
}

ip_address ip_address::unmapped() const {
  if (family != family::v6)
    return *this;
  static const std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const std::uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(bytes.data(), mapped, 12) != 0 && std::memcmp(bytes.data(), nat64, 12) != 0)
    return *this;
  ip_address v;
  v.family = family::v4;
  std::memcpy(v.bytes.data(), bytes.data() + 12, 4);
  return v;
}

std::optional<ip_address> parse_address(std::string_view text) {
  if (text.empty() || text.size() > 45)
    return std::nullopt;
  std::string s(text);
  ip_address a;
  if (::inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = family::v4;
    return a;
  }
  if (::inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.family = family::v6;
    return a;
  }
  return std::nullopt;
}

std::string to_string(const ip_address& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(a.family == family::v4 ? AF_INET : AF_INET6, a.bytes.data(), buf, sizeof buf);
  return buf;
}

bool cidr::contains(const ip_address& a) const {
  ip_address x = a.unmapped();
  if (x.family != base.family)
    return false;
  return prefix_equal(x.bytes, base.bytes, prefix);
}

result<cidr> parse_cidr(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_argument, "'" + std::string(text) +
                                                "' is not an address block: " + why +
                                                " (write one as 10.0.0.0/8 or 2001:db8::/32)");
  };
  auto slash = text.find('/');
  auto addr = parse_address(text.substr(0, slash));
  if (!addr)
    return bad("the address is not IPv4 or IPv6");
  int bits = addr->family == family::v4 ? 32 : 128;
  int prefix = bits;
  if (slash != std::string_view::npos) {
    auto p = text.substr(slash + 1);
    if (p.empty() || p.size() > 3)
      return bad("the prefix length is missing or too long");
    prefix = 0;
    for (char ch : p) {
      if (ch < '0' || ch > '9')
        return bad("the prefix length is not a number");
      prefix = prefix * 10 + (ch - '0');
    }
    if (prefix > bits)
      return bad("the prefix length is above " + std::to_string(bits));
  }
  if (!host_bits_zero(*addr, prefix))
    return bad("bits are set below the prefix length");
  return cidr{*addr, std::uint8_t(prefix)};
}

std::string to_string(const cidr& c) {
  return to_string(c.base) + "/" + std::to_string(c.prefix);
}

const char* to_string(address_class c) {
  switch (c) {
  case address_class::public_internet:
    return "public";
  case address_class::unspecified:
    return "unspecified";
  case address_class::loopback:
    return "loopback";
  case address_class::link_local:
    return "link-local";
  case address_class::multicast:
    return "multicast";
  case address_class::reserved:
    return "reserved";
  case address_class::private_range:
    return "private";
  case address_class::node:
    return "node";
  case address_class::sandbox:
    return "sandbox";
  }
  return "unknown";
}

std::optional<address_class> address_class_named(std::string_view name) {
  for (int i = 0; i <= int(address_class::sandbox); ++i)
    if (name == to_string(address_class(i)))
      return address_class(i);
  return std::nullopt;
}

address_class classify(const ip_address& raw, const node_addresses& node) {
  ip_address a = raw.unmapped();
  for (const auto& own : node.own)
    if (own.unmapped() == a)
      return address_class::node;
  for (const auto& r : node.sandbox_ranges)
    if (r.contains(a))
      return address_class::sandbox;
  if (a.family == family::v4) {
    if (in_v4(a, 0x00000000, 8))
      return address_class::unspecified;
    if (in_v4(a, 0x7f000000, 8))
      return address_class::loopback;
    if (in_v4(a, 0xa9fe0000, 16))
      return address_class::link_local;
    if (in_v4(a, 0xe0000000, 4) || in_v4(a, 0xffffffff, 32))
      return address_class::multicast;
    if (in_v4(a, 0xf0000000, 4) || in_v4(a, 0xc0000000, 24))
      return address_class::reserved;
    if (in_v4(a, 0x0a000000, 8) || in_v4(a, 0xac100000, 12) || in_v4(a, 0xc0a80000, 16) ||
        in_v4(a, 0x64400000, 10))
      return address_class::private_range;
    return address_class::public_internet;
  }
  auto& b = a.bytes;
  static const std::array<std::uint8_t, 16> zero{};
  std::array<std::uint8_t, 16> one{};
  one[15] = 1;
  if (b == zero)
    return address_class::unspecified;
  if (b == one)
    return address_class::loopback;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
    return address_class::link_local;
  if (b[0] == 0xff)
    return address_class::multicast;
  if ((b[0] & 0xfe) == 0xfc)
    return address_class::private_range;
  // 6to4 (2002::/16) and Teredo (2001::/32) carry IPv4 addresses a relay would reach.
  if ((b[0] == 0x20 && b[1] == 0x02) || (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0))
    return address_class::reserved;
  // The rest of ::/8 (IPv4-compatible, discard-only 100::/64, ...) is nothing a sandbox dials.
  if (b[0] == 0)
    return address_class::reserved;
  return address_class::public_internet;
}

} // namespace sandboxd::network
