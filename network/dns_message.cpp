#include "network/dns_message.hpp"

#include "network/rule.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace sandboxd::network {
namespace {

constexpr std::size_t k_header = 12;
constexpr std::uint16_t k_class_in = 1;

error malformed(std::string what) {
  return {errc::invalid_argument, "DNS message: " + std::move(what)};
}

std::uint16_t u16(std::span<const std::uint8_t> m, std::size_t at) {
  return std::uint16_t((m[at] << 8) | m[at + 1]);
}
std::uint32_t u32(std::span<const std::uint8_t> m, std::size_t at) {
  return (std::uint32_t(u16(m, at)) << 16) | u16(m, at + 2);
}
void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(std::uint8_t(v >> 8));
  out.push_back(std::uint8_t(v));
}
void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  put16(out, std::uint16_t(v >> 16));
  put16(out, std::uint16_t(v));
}

struct name_read {
  std::vector<std::string> labels; // raw bytes
  std::size_t end = 0;             // after the name where it starts (not where a pointer led)
};

// A name at `at` (RFC 1035 §4.1.4): labels, ending in the root label or a pointer to an
// earlier name (only where `pointers` allow it); at most 255 bytes and 64 pointers followed.
result<name_read> read_name(std::span<const std::uint8_t> m, std::size_t at, bool pointers) {
  name_read r;
  std::size_t pos = at, length = 0;
  int jumps = 0;
  std::optional<std::size_t> end;
  for (;;) {
    if (pos >= m.size())
      return malformed("a name runs past the message's end");
    std::uint8_t n = m[pos];
    if ((n & 0xc0) == 0xc0) {
      if (!pointers)
        return malformed("a compression pointer in a question");
      if (pos + 1 >= m.size())
        return malformed("a compression pointer is cut short");
      std::size_t target = ((n & 0x3f) << 8) | m[pos + 1];
      if (!end)
        end = pos + 2;
      if (++jumps > 64 || target >= pos)
        return malformed("a compression pointer does not point back");
      pos = target;
      continue;
    }
    if (n & 0xc0)
      return malformed("a label of an unknown kind");
    if (n == 0) {
      r.end = end ? *end : pos + 1;
      return r;
    }
    if (pos + 1 + n > m.size())
      return malformed("a label runs past the message's end");
    length += n + 1;
    if (length > 255)
      return malformed("a name longer than 255 bytes");
    r.labels.emplace_back(reinterpret_cast<const char*>(&m[pos + 1]), n);
    pos += 1 + n;
  }
}

std::string text_of(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& l : labels) {
    for (unsigned char c : l) {
      if (c == '.' || c == '\\') {
        out += '\\';
        out += char(c);
      } else if (c < 0x21 || c > 0x7e) {
        char buf[5];
        std::snprintf(buf, sizeof buf, "\\%03u", unsigned(c));
        out += buf;
      } else {
        out += char(c);
      }
    }
    out += '.';
  }
  return out.empty() ? "." : out;
}

// The normal form of a name read from the wire; nullopt when a label holds a byte no host
// name has (a '.', which text would hide, among them).
std::optional<std::string> normal_of(const std::vector<std::string>& labels) {
  std::string joined;
  for (const auto& l : labels) {
    if (l.find('.') != std::string::npos)
      return std::nullopt;
    joined += l;
    joined += '.';
  }
  return normal_name(joined);
}

void put_name(std::vector<std::uint8_t>& out, const std::string& name) {
  std::size_t at = 0;
  while (at < name.size()) {
    auto dot = name.find('.', at);
    if (dot == std::string::npos)
      dot = name.size();
    out.push_back(std::uint8_t(dot - at));
    out.insert(out.end(), name.begin() + long(at), name.begin() + long(dot));
    at = dot + 1;
  }
  out.push_back(0);
}

} // namespace

result<dns_question> parse_query(std::span<const std::uint8_t> m) {
  if (m.size() < k_header)
    return malformed("shorter than its header");
  std::uint16_t flags = u16(m, 2);
  if (flags & 0x8000)
    return malformed("a response where a query was expected");
  if (((flags >> 11) & 0xf) != 0)
    return malformed("an opcode other than QUERY");
  if (u16(m, 4) != 1)
    return malformed(std::to_string(u16(m, 4)) + " questions (one is answered)");
  auto name = read_name(m, k_header, false);
  if (!name)
    return name.err();
  if (name->end + 4 > m.size())
    return malformed("the question is cut short");
  dns_question q;
  q.id = u16(m, 0);
  q.recursion_desired = (flags & 0x0100) != 0;
  q.name_text = text_of(name->labels);
  q.name = normal_of(name->labels).value_or("");
  q.type = u16(m, name->end);
  q.klass = u16(m, name->end + 2);
  q.question_end = name->end + 4;
  return q;
}

std::vector<std::uint8_t> make_response(std::span<const std::uint8_t> query, const dns_question& q,
                                        std::uint8_t rcode,
                                        const std::vector<ip_address>& addresses,
                                        std::uint32_t ttl) {
  std::vector<ip_address> answers;
  if (rcode == dns_rcode::no_error && q.klass == k_class_in &&
      (q.type == dns_type::a || q.type == dns_type::aaaa))
    for (const auto& a : addresses)
      if ((a.family == family::v4) == (q.type == dns_type::a))
        answers.push_back(a);
  std::vector<std::uint8_t> out;
  put16(out, q.id);
  // QR, opcode QUERY, RD as asked, RA.
  put16(out, std::uint16_t(0x8000 | (q.recursion_desired ? 0x0100 : 0) | 0x0080 | (rcode & 0xf)));
  put16(out, 1);
  put16(out, std::uint16_t(answers.size()));
  put16(out, 0);
  put16(out, 0);
  out.insert(out.end(), query.begin() + k_header, query.begin() + long(q.question_end));
  for (const auto& a : answers) {
    put16(out, 0xc000 | k_header); // the question's name
    put16(out, q.type);
    put16(out, k_class_in);
    put32(out, ttl);
    std::size_t n = a.family == family::v4 ? 4 : 16;
    put16(out, std::uint16_t(n));
    out.insert(out.end(), a.bytes.begin(), a.bytes.begin() + long(n));
  }
  return out;
}

std::vector<std::uint8_t> make_query(std::uint16_t id, const std::string& name,
                                     std::uint16_t type) {
  std::vector<std::uint8_t> out;
  put16(out, id);
  put16(out, 0x0100); // RD
  put16(out, 1);
  put16(out, 0);
  put16(out, 0);
  put16(out, 0);
  put_name(out, name);
  put16(out, type);
  put16(out, k_class_in);
  return out;
}

result<dns_answer> parse_response(std::span<const std::uint8_t> m, std::uint16_t id,
                                  const std::string& name, std::uint16_t type) {
  if (m.size() < k_header)
    return malformed("shorter than its header");
  std::uint16_t flags = u16(m, 2);
  if (u16(m, 0) != id || !(flags & 0x8000))
    return malformed("not the reply to query " + std::to_string(id));
  dns_answer a;
  a.rcode = std::uint8_t(flags & 0xf);
  a.truncated = (flags & 0x0200) != 0;
  std::size_t at = k_header;
  for (std::uint16_t i = 0, n = u16(m, 4); i < n; ++i) {
    auto q = read_name(m, at, true);
    if (!q)
      return q.err();
    if (q->end + 4 > m.size())
      return malformed("a question is cut short");
    if (n != 1 || normal_of(q->labels).value_or("") != name || u16(m, q->end) != type)
      return malformed("the reply is to another question");
    at = q->end + 4;
  }
  struct record {
    std::string owner;
    std::uint16_t type;
    std::uint32_t ttl;
    std::span<const std::uint8_t> data;
    std::size_t data_at;
  };
  std::vector<record> records;
  for (std::uint16_t i = 0, n = u16(m, 6); i < n; ++i) {
    auto owner = read_name(m, at, true);
    if (!owner)
      return owner.err();
    if (owner->end + 10 > m.size())
      return malformed("a record is cut short");
    std::size_t length = u16(m, owner->end + 8);
    std::size_t data_at = owner->end + 10;
    if (data_at + length > m.size())
      return malformed("a record's data runs past the message's end");
    if (u16(m, owner->end + 2) == k_class_in)
      records.push_back({normal_of(owner->labels).value_or(""), u16(m, owner->end),
                         u32(m, owner->end + 4), m.subspan(data_at, length), data_at});
    at = data_at + length;
  }
  // Follow the CNAME chain from the name asked (at most 8 links), then take its addresses.
  std::string current = name;
  std::optional<std::uint32_t> ttl;
  auto keep_ttl = [&](std::uint32_t t) { ttl = ttl ? std::min(*ttl, t) : t; };
  for (int links = 0;; ++links) {
    auto cname = std::find_if(records.begin(), records.end(), [&](const record& r) {
      return r.type == dns_type::cname && r.owner == current && !r.owner.empty();
    });
    if (cname == records.end())
      break;
    if (links == 8)
      return malformed("a CNAME chain longer than 8");
    auto target = read_name(m, cname->data_at, true);
    if (!target)
      return target.err();
    auto normal = normal_of(target->labels);
    if (!normal)
      return malformed("a CNAME to something that is not a host name");
    keep_ttl(cname->ttl);
    current = *normal;
  }
  for (const auto& r : records) {
    if (r.owner != current || r.type != type || (type != dns_type::a && type != dns_type::aaaa))
      continue;
    std::size_t n = type == dns_type::a ? 4 : 16;
    if (r.data.size() != n)
      return malformed("an address record of " + std::to_string(r.data.size()) + " bytes");
    ip_address addr;
    addr.family = type == dns_type::a ? family::v4 : family::v6;
    std::copy(r.data.begin(), r.data.end(), addr.bytes.begin());
    a.addresses.push_back(addr);
    keep_ttl(r.ttl);
  }
  a.ttl = ttl.value_or(0);
  return a;
}

} // namespace sandboxd::network
