// dns_message — the DNS messages sandboxd's resolver reads and writes (RFC 1035 §4.1): the
// question a sandbox asks, the answer or refusal it gets, and the question the resolver asks
// its upstream server and that server's answer. Pure; over TCP each message is preceded by
// its length in two bytes (RFC 1035 §4.2.2), which the caller handles.
//
// A sandbox's query is read only as far as its one question (any additional records, such
// as EDNS's OPT, are ignored); a name whose labels are not host-name labels (rule.hpp's
// normal_name) is kept only as text for the denial, so a label carrying arbitrary bytes
// (DNS tunnelling) can never match a rule.
#pragma once

#include "base/result.hpp"
#include "network/address.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sandboxd::network {

namespace dns_type {
inline constexpr std::uint16_t a = 1, cname = 5, aaaa = 28, any = 255;
}
namespace dns_rcode {
inline constexpr std::uint8_t no_error = 0, format_error = 1, server_failure = 2, name_error = 3,
                              not_implemented = 4, refused = 5;
}

inline constexpr std::size_t k_dns_max_udp = 512; // without EDNS (RFC 1035 §4.2.1)

struct dns_question {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;       // the host name in normal form; "" when it is not one
  std::string name_text;  // the name as asked, non-printable bytes as \DDD (for the denial)
  std::uint16_t type = 0; // dns_type
  std::uint16_t klass = 1;
  std::size_t question_end = 0; // offset of the byte after the question
};

// A standard query (QR 0, opcode QUERY) with exactly one question; invalid_argument
// otherwise, and for a truncated message or a malformed name.
result<dns_question> parse_query(std::span<const std::uint8_t> message);

// The reply to `q` (whose bytes are `query`): its question echoed and `rcode`; with rcode
// no_error, `addresses` as answers of q's type (those of the other family left out) with
// `ttl` (none: the name has no address of that type). Recursion is available; the answer is
// not authoritative.
std::vector<std::uint8_t> make_response(std::span<const std::uint8_t> query, const dns_question& q,
                                        std::uint8_t rcode,
                                        const std::vector<ip_address>& addresses = {},
                                        std::uint32_t ttl = 0);

// A recursive query for `name` (normal form) of `type`.
std::vector<std::uint8_t> make_query(std::uint16_t id, const std::string& name, std::uint16_t type);

struct dns_answer {
  std::uint8_t rcode = 0;
  bool truncated = false;            // TC: ask again over TCP
  std::vector<ip_address> addresses; // of the name asked, through its CNAME chain
  std::uint32_t ttl = 0;             // the least TTL of the records used
};

// An upstream server's reply to the query make_query(id, name, type) made: invalid_argument
// when it is not a reply to that query (another id, name or type) or is malformed.
result<dns_answer> parse_response(std::span<const std::uint8_t> message, std::uint16_t id,
                                  const std::string& name, std::uint16_t type);

} // namespace sandboxd::network
