// test_network_policy — the egress policy's pure core: addresses and their classes, rules
// and their canonical text, and the verdict on each kind of destination a sandbox may try
// (docs/network.md "Policy").
#define BOOST_TEST_MODULE network_policy
#include <boost/test/unit_test.hpp>

#include "network/policy.hpp"

#include <ostream>
#include <string>

using namespace sandboxd;
using namespace sandboxd::network;

namespace sandboxd::network {
std::ostream& operator<<(std::ostream& out, address_class c) {
  return out << to_string(c);
}
} // namespace sandboxd::network

namespace {

ip_address addr(const char* s) {
  auto a = parse_address(s);
  BOOST_REQUIRE_MESSAGE(a, s);
  return *a;
}

node_addresses node() {
  node_addresses n;
  n.own = {addr("192.0.2.10"), addr("2001:db8::10")};
  n.sandbox_ranges = {*parse_cidr("10.200.0.0/16")};
  return n;
}

policy compiled(events::network_mode mode, std::vector<std::string> rules) {
  auto p = compile({mode, std::move(rules)});
  BOOST_REQUIRE_MESSAGE(p.ok(), (p.ok() ? std::string() : p.err().message));
  return *p;
}

destination to(const char* name, const char* address, std::uint16_t port, bool resolves = true,
               protocol proto = protocol::tcp) {
  destination d;
  d.protocol = proto;
  d.name = name;
  if (address) {
    d.address = addr(address);
    d.klass = classify(*d.address, node());
  }
  d.port = port;
  d.name_resolves = resolves;
  return d;
}

} // namespace

BOOST_AUTO_TEST_CASE(addresses_are_classified_whatever_their_spelling) {
  auto n = node();
  BOOST_TEST(classify(addr("198.51.100.7"), n) == address_class::public_internet);
  BOOST_TEST(classify(addr("169.254.169.254"), n) == address_class::link_local);
  BOOST_TEST(classify(addr("::ffff:169.254.169.254"), n) == address_class::link_local);
  BOOST_TEST(classify(addr("64:ff9b::a9fe:a9fe"), n) == address_class::link_local);
  BOOST_TEST(classify(addr("127.0.0.1"), n) == address_class::loopback);
  BOOST_TEST(classify(addr("127.255.0.9"), n) == address_class::loopback);
  BOOST_TEST(classify(addr("::1"), n) == address_class::loopback);
  BOOST_TEST(classify(addr("::ffff:127.0.0.1"), n) == address_class::loopback);
  BOOST_TEST(classify(addr("0.0.0.0"), n) == address_class::unspecified);
  BOOST_TEST(classify(addr("::"), n) == address_class::unspecified);
  BOOST_TEST(classify(addr("10.1.2.3"), n) == address_class::private_range);
  BOOST_TEST(classify(addr("172.31.255.1"), n) == address_class::private_range);
  BOOST_TEST(classify(addr("172.32.0.1"), n) == address_class::public_internet);
  BOOST_TEST(classify(addr("192.168.0.1"), n) == address_class::private_range);
  BOOST_TEST(classify(addr("100.64.0.1"), n) == address_class::private_range);
  BOOST_TEST(classify(addr("fd00::1"), n) == address_class::private_range);
  BOOST_TEST(classify(addr("fe80::1"), n) == address_class::link_local);
  BOOST_TEST(classify(addr("224.0.0.251"), n) == address_class::multicast);
  BOOST_TEST(classify(addr("255.255.255.255"), n) == address_class::multicast);
  BOOST_TEST(classify(addr("ff02::1"), n) == address_class::multicast);
  BOOST_TEST(classify(addr("2002:a00:1::"), n) == address_class::reserved); // 6to4 of 10.0.0.1
  BOOST_TEST(classify(addr("192.0.2.10"), n) == address_class::node);
  BOOST_TEST(classify(addr("::ffff:192.0.2.10"), n) == address_class::node);
  BOOST_TEST(classify(addr("2001:db8::10"), n) == address_class::node);
  BOOST_TEST(classify(addr("10.200.3.1"), n) == address_class::sandbox);
  BOOST_TEST(classify(addr("2606:4700::1"), n) == address_class::public_internet);
}

BOOST_AUTO_TEST_CASE(address_blocks_parse_only_when_exact) {
  BOOST_TEST(to_string(*parse_cidr("10.0.0.0/8")) == "10.0.0.0/8");
  BOOST_TEST(to_string(*parse_cidr("2001:DB8::/32")) == "2001:db8::/32");
  BOOST_TEST(to_string(*parse_cidr("198.51.100.7")) == "198.51.100.7/32");
  BOOST_TEST(parse_cidr("10.1.2.3/8").code() == errc::invalid_argument); // host bits set
  BOOST_TEST(parse_cidr("10.0.0.0/33").code() == errc::invalid_argument);
  BOOST_TEST(parse_cidr("10.0.0/8").code() == errc::invalid_argument);
  BOOST_TEST(parse_cidr("example.com/8").code() == errc::invalid_argument);
  BOOST_TEST(parse_cidr("10.0.0.0/").code() == errc::invalid_argument);
  auto c = *parse_cidr("172.16.0.0/12");
  BOOST_TEST(c.contains(addr("172.31.0.1")));
  BOOST_TEST(!c.contains(addr("172.32.0.1")));
  BOOST_TEST(c.contains(addr("::ffff:172.16.0.1")));
  BOOST_TEST(!c.contains(addr("2001:db8::1")));
}

BOOST_AUTO_TEST_CASE(rules_parse_into_their_canonical_text) {
  const std::pair<const char*, const char*> cases[] = {
    {"api.github.com", "api.github.com"},
    {"API.GitHub.com.", "api.github.com"},
    {"tcp://pypi.org:443", "pypi.org:443"},
    {"*.pythonhosted.org", "*.pythonhosted.org"},
    {"example.com:443,80,8000-8999", "example.com:80,443,8000-8999"},
    {"10.0.0.0/8", "10.0.0.0/8"},
    {"10.0.0.0/8:5432", "10.0.0.0/8:5432"},
    {"198.51.100.7", "198.51.100.7"},
    {"198.51.100.7:53", "198.51.100.7:53"},
    {"udp://198.51.100.7:53", "udp://198.51.100.7:53"},
    {"2001:db8::/32", "2001:db8::/32"},
    {"[2001:db8::/32]:443", "[2001:db8::/32]:443"},
    {"[2001:db8::1]", "2001:db8::1"},
    {"::ffff:1.2.3.4", "::ffff:1.2.3.4"},
  };
  for (auto [in, out] : cases) {
    auto r = parse_rule(in);
    BOOST_REQUIRE_MESSAGE(r.ok(), in << ": " << (r.ok() ? std::string() : r.err().message));
    BOOST_TEST(to_string(*r) == out, in);
    auto again = parse_rule(to_string(*r));
    BOOST_REQUIRE(again.ok());
    BOOST_TEST((*again == *r), in);
  }
}

BOOST_AUTO_TEST_CASE(malformed_rules_are_refused_naming_the_rule) {
  for (const char* bad : {"",
                          "*",
                          "*.",
                          "a..b",
                          "-a.com",
                          "a-.com",
                          "exa mple.com",
                          "ex_ample.com",
                          "a.com:0",
                          "a.com:65536",
                          "a.com:9-8",
                          "a.com:",
                          "http://a.com",
                          "10.1.2.3/8",
                          "[2001:db8::1",
                          "[2001:db8::1]x",
                          "foo.*.com",
                          "*foo.com",
                          "1.2.3.4.5",
                          "a.com:1,,2"}) {
    auto r = parse_rule(bad);
    BOOST_TEST(!r.ok(), bad);
    if (!r) {
      BOOST_TEST(r.code() == errc::invalid_argument);
      BOOST_TEST(r.err().message.find(std::string("'") + bad) != std::string::npos,
                 r.err().message);
    }
  }
  std::string label(64, 'a');
  BOOST_TEST(!parse_rule(label + ".com").ok());
  BOOST_TEST(parse_rule(std::string(63, 'a') + ".com").ok());
}

BOOST_AUTO_TEST_CASE(a_wildcard_matches_the_names_below_it_and_not_the_name_itself) {
  auto r = *parse_rule("*.github.com");
  BOOST_TEST(matches_name(r, "api.github.com"));
  BOOST_TEST(matches_name(r, "a.b.github.com"));
  BOOST_TEST(!matches_name(r, "github.com"));
  BOOST_TEST(!matches_name(r, "evilgithub.com"));
  BOOST_TEST(!matches_name(r, "github.com.evil.org"));
  auto exact = *parse_rule("github.com");
  BOOST_TEST(matches_name(exact, "github.com"));
  BOOST_TEST(!matches_name(exact, "api.github.com"));
}

BOOST_AUTO_TEST_CASE(mode_none_denies_everything_and_takes_no_rules) {
  auto p = compiled(events::network_mode::none, {});
  BOOST_TEST(!evaluate(p, to("example.com", "198.51.100.7", 443)).allowed);
  BOOST_TEST(!evaluate(p, to("example.com", nullptr, 0)).allowed);
  auto r = compile({events::network_mode::none, {"example.com"}});
  BOOST_TEST(r.code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(an_allowed_name_is_allowed_only_at_an_address_the_resolver_gave) {
  auto p = compiled(events::network_mode::allow_list, {"pypi.org", "*.github.com:443"});
  auto v = evaluate(p, to("pypi.org", "198.51.100.7", 443));
  BOOST_TEST(v.allowed);
  BOOST_TEST(v.rule == "pypi.org");
  BOOST_TEST(evaluate(p, to("api.github.com", "198.51.100.8", 443)).rule == "*.github.com:443");
  // Port outside the rule.
  BOOST_TEST(!evaluate(p, to("api.github.com", "198.51.100.8", 80)).allowed);
  // Not listed.
  auto other = evaluate(p, to("evil.example", "198.51.100.9", 443));
  BOOST_TEST(!other.allowed);
  BOOST_TEST(other.reason.find("evil.example is not in the sandbox's allow list") !=
               std::string::npos,
             other.reason);
  // An allowed name, dialled at an address the resolver did not give for it: a forged
  // Host / SNI / CONNECT.
  auto forged = evaluate(p, to("pypi.org", "198.51.100.9", 443, false));
  BOOST_TEST(!forged.allowed);
  BOOST_TEST(forged.reason.find("did not answer 198.51.100.9 for pypi.org") != std::string::npos,
             forged.reason);
  // A bare address, no name.
  BOOST_TEST(!evaluate(p, to("", "198.51.100.7", 443)).allowed);
  // udp to an allowed tcp name.
  BOOST_TEST(!evaluate(p, to("pypi.org", "198.51.100.7", 443, true, protocol::udp)).allowed);
}

BOOST_AUTO_TEST_CASE(a_name_never_makes_a_private_or_host_address_reachable) {
  auto p = compiled(events::network_mode::allow_list, {"rebind.example"});
  for (const char* a : {"10.1.2.3", "192.168.1.1", "127.0.0.1", "169.254.169.254", "192.0.2.10",
                        "10.200.0.2", "::1", "fd00::1", "::ffff:10.1.2.3", "0.0.0.0"}) {
    auto v = evaluate(p, to("rebind.example", a, 80, true));
    BOOST_TEST(!v.allowed, a);
    BOOST_TEST(v.reason.find("address") != std::string::npos, v.reason);
  }
}

BOOST_AUTO_TEST_CASE(a_private_block_is_reachable_only_through_a_rule_that_covers_it) {
  auto p = compiled(events::network_mode::full, {"10.1.0.0/16:5432"});
  BOOST_TEST(evaluate(p, to("", "10.1.2.3", 5432)).allowed);
  BOOST_TEST(evaluate(p, to("", "10.1.2.3", 5432)).rule == "10.1.0.0/16:5432");
  BOOST_TEST(!evaluate(p, to("", "10.1.2.3", 22)).allowed);
  BOOST_TEST(!evaluate(p, to("", "10.2.0.1", 5432)).allowed);
  // Mode all: any public address, by name or not; private ones only as listed.
  BOOST_TEST(evaluate(p, to("", "198.51.100.7", 22)).allowed);
  BOOST_TEST(evaluate(p, to("", "198.51.100.7", 22)).rule == "all");
  BOOST_TEST(evaluate(p, to("", "2606:4700::1", 443)).allowed);
  BOOST_TEST(!evaluate(p, to("", "192.168.0.1", 80)).allowed);
}

BOOST_AUTO_TEST_CASE(never_reachable_classes_stay_closed_under_any_rule) {
  auto p = compiled(events::network_mode::full, {"0.0.0.0/0", "::/0", "udp://0.0.0.0/0"});
  for (const char* a : {"169.254.169.254", "127.0.0.1", "192.0.2.10", "10.200.0.6", "::1",
                        "fe80::1", "224.0.0.1", "240.0.0.1", "::ffff:169.254.169.254"}) {
    auto v = evaluate(p, to("", a, 80));
    BOOST_TEST(!v.allowed, a);
    BOOST_TEST(v.reason.find("never reachable") != std::string::npos, v.reason);
  }
  BOOST_TEST(evaluate(p, to("", "10.9.9.9", 80)).allowed); // private, listed by 0.0.0.0/0
}

BOOST_AUTO_TEST_CASE(dns_questions_are_answered_for_allowed_names_only) {
  auto p = compiled(events::network_mode::allow_list, {"pypi.org", "*.github.com", "10.0.0.0/8"});
  BOOST_TEST(evaluate(p, to("pypi.org", nullptr, 0)).allowed);
  BOOST_TEST(evaluate(p, to("codeload.github.com", nullptr, 0)).allowed);
  BOOST_TEST(!evaluate(p, to("github.com", nullptr, 0)).allowed);
  BOOST_TEST(!evaluate(p, to("aGVsbG8gd29ybGQ.tunnel.example", nullptr, 0)).allowed);
  auto all = compiled(events::network_mode::full, {});
  BOOST_TEST(evaluate(all, to("anything.example", nullptr, 0)).allowed);
}

BOOST_AUTO_TEST_CASE(udp_is_allowed_only_by_udp_rules) {
  auto p =
    compiled(events::network_mode::allow_list, {"udp://198.51.100.53:53", "198.51.100.0/24"});
  BOOST_TEST(evaluate(p, to("", "198.51.100.53", 53, false, protocol::udp)).allowed);
  BOOST_TEST(!evaluate(p, to("", "198.51.100.53", 123, false, protocol::udp)).allowed);
  BOOST_TEST(!evaluate(p, to("", "198.51.100.54", 53, false, protocol::udp)).allowed);
  BOOST_TEST(evaluate(p, to("", "198.51.100.54", 53, false, protocol::tcp)).allowed);
}

BOOST_AUTO_TEST_CASE(policies_round_trip_through_their_event_form) {
  auto p = compiled(events::network_mode::allow_list, {"PyPI.org.", "10.0.0.0/8:1-1024"});
  auto e = to_event(p);
  BOOST_TEST(e.allowed_hosts == (std::vector<std::string>{"pypi.org", "10.0.0.0/8:1-1024"}),
             boost::test_tools::per_element());
  BOOST_TEST(compile(e).ok());
  std::vector<std::string> many(k_max_rules + 1, "a.example");
  BOOST_TEST(compile({events::network_mode::allow_list, many}).code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_policy_above_the_tenant_ceiling_is_permission_denied) {
  ceiling c{events::network_mode::allow_list,
            {*parse_rule("*.github.com"), *parse_rule("pypi.org:443"), *parse_rule("10.1.0.0/16")}};
  BOOST_TEST(check_ceiling(compiled(events::network_mode::allow_list,
                                    {"api.github.com", "pypi.org:443", "10.1.2.0/24"}),
                           c, "acme")
               .ok());
  auto wide = check_ceiling(compiled(events::network_mode::full, {}), c, "acme");
  BOOST_TEST(wide.code() == errc::permission_denied);
  BOOST_TEST(wide.err().message.find("tenant acme") != std::string::npos, wide.err().message);
  BOOST_TEST(
    check_ceiling(compiled(events::network_mode::allow_list, {"github.com"}), c, "acme").code() ==
    errc::permission_denied);
  BOOST_TEST(
    check_ceiling(compiled(events::network_mode::allow_list, {"pypi.org"}), c, "acme").code() ==
    errc::permission_denied); // every port is more than :443
  BOOST_TEST(
    check_ceiling(compiled(events::network_mode::allow_list, {"10.0.0.0/8"}), c, "acme").code() ==
    errc::permission_denied);
  ceiling open{events::network_mode::full, {}};
  BOOST_TEST(
    check_ceiling(compiled(events::network_mode::full, {"10.0.0.0/8"}), open, "acme").ok());
  ceiling closed{events::network_mode::none, {}};
  BOOST_TEST(
    check_ceiling(compiled(events::network_mode::allow_list, {"a.example"}), closed, "x").code() ==
    errc::permission_denied);
}
