// test_egress_rules — the nftables table of network/egress_rules.hpp, loaded into the kernel
// with nft_table, against real links (runtime/sandbox_link.hpp): what a sandbox sends reaches
// sandboxd's proxy and resolver and nothing else, and what it may not send is refused at
// once. The binary runs in a network namespace of its own (the "node"), with an "outside"
// namespace beside it; nothing it sends leaves the machine.
#define BOOST_TEST_MODULE egress_rules
#include <boost/test/unit_test.hpp>

#include "network/egress_rules.hpp"
#include "network/nft_table.hpp"
#include "network/socket_address.hpp"
#include "runtime/sandbox_link.hpp"
#include "tests/network/socket_probe.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/private_netns.hpp"
#include "tests/support/temp_dir.hpp"

#include <memory>
#include <unistd.h>

using namespace sandboxd;
using namespace sandboxd::test;
using sandboxd::test::probe::listener;

namespace {

boost::test_tools::assertion_result can_run(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(::geteuid() == 0);
  if (!r)
    r.message() << "needs root (nftables, links)";
  return r;
}

// One node for the whole binary: two links (sandboxes a and b), the proxy's, the
// resolver's and a control port listening on the node, and the outside.
struct node {
  temp_dir dir{"egress"};
  guardian cleanup{"for f in " + dir.path() + "/ns-*; do umount -l \"$f\"; done 2>/dev/null"};
  runtime::sandbox_link a, b;
  listener proxy{"0.0.0.0", SOCK_STREAM};
  listener dns_udp{"0.0.0.0", SOCK_DGRAM};
  listener dns_tcp{"0.0.0.0", SOCK_STREAM, dns_udp.port};
  listener control{"0.0.0.0", SOCK_STREAM};
  listener control_udp{"0.0.0.0", SOCK_DGRAM};
  netns outside;
  network::egress_params params;
  network::nft_table nft;

  node() {
    auto range = runtime::parse_link_range("10.200.0.0/24");
    a = runtime::link_of(*range, 0, "e9e9e9e9", dir / "ns-a");
    b = runtime::link_of(*range, 1, "e9e9e9e9", dir / "ns-b");
    runtime::make_link(a);
    runtime::make_link(b);
    add_veth("ox0", nullptr, "10.99.0.1/24", "ox1", &outside, "10.99.0.2/24");
    outside.check("ip route add 10.200.0.0/24 via 10.99.0.1");
    check_shell("sysctl -qw net.ipv4.ip_forward=1");
    params.table = "sandboxd_e9e9e9e9";
    params.interface_prefix = runtime::link_interface_prefix("e9e9e9e9");
    params.proxy_port = proxy.port;
    params.dns_port = dns_udp.port;
    params.log_group = 0;
    auto loaded = nft.run(network::egress_ruleset(params, {entry(a), entry(b)}));
    BOOST_TEST_REQUIRE(loaded.ok(), (loaded ? "" : loaded.err().message));
  }
  ~node() {
    runtime::remove_link(a);
    runtime::remove_link(b);
  }
  static network::link_entry entry(const runtime::sandbox_link& l) {
    return {l.host_interface, l.host_address, l.sandbox_address};
  }
};

node& the_node() {
  static std::unique_ptr<node> n;
  if (!n)
    n = std::make_unique<node>();
  return *n;
}

// What the proxy saw of one connection the sandbox made.
struct seen {
  std::optional<network::socket_address> original, peer, local;
};

seen accept_one(listener& l) {
  seen s;
  auto fd = l.accept_within(std::chrono::milliseconds(2000));
  if (!fd)
    return s;
  s.original = network::original_destination(fd.get());
  s.peer = network::peer_of(fd.get());
  s.local = network::local_of(fd.get());
  return s;
}

std::string str(const std::optional<network::socket_address>& a) {
  return a ? network::to_string(*a) : "(none)";
}

} // namespace

BOOST_AUTO_TEST_SUITE(egress, *boost::unit_test::precondition(can_run))

BOOST_AUTO_TEST_CASE(tcp_from_a_link_reaches_the_proxy_whatever_it_dials) {
  auto& n = the_node();
  const std::vector<std::pair<std::string, std::uint16_t>> dialled = {
    {"198.51.100.7", 443},              // the internet
    {n.b.host_address, 22},             // another link's host side
    {n.b.sandbox_address, 8080},        // another sandbox
    {n.a.host_address, n.control.port}, // a port of its own host side
    {"10.99.0.1", n.control.port},      // the node's address outside
    {n.a.host_address, n.proxy.port},   // the proxy itself
  };
  for (const auto& [address, port] : dialled) {
    probe::connection c;
    probe::in_netns(n.a.netns_path, [&] { c = probe::connect_tcp(address, port); });
    auto s = accept_one(n.proxy);
    BOOST_TEST(str(s.original) == address + ":" + std::to_string(port));
    BOOST_TEST_REQUIRE(s.peer.has_value());
    BOOST_TEST(network::to_string(s.peer->address) == n.a.sandbox_address);
    BOOST_TEST(str(s.local) == n.a.host_address + ":" + std::to_string(n.proxy.port));
  }
  BOOST_TEST(!n.control.accept_within(std::chrono::milliseconds(100)));
}

BOOST_AUTO_TEST_CASE(dns_to_any_address_reaches_the_resolver_and_its_answer_comes_back) {
  auto& n = the_node();
  for (const std::string& server : {n.a.host_address, std::string("203.0.113.9")}) {
    std::optional<std::string> answer;
    std::thread resolver([&] {
      auto q = n.dns_udp.receive_within(std::chrono::milliseconds(2000));
      if (q)
        n.dns_udp.reply(*q, "answer to " + q->data);
    });
    probe::in_netns(n.a.netns_path, [&] { answer = probe::udp_exchange(server, 53, "question"); });
    resolver.join();
    BOOST_TEST(answer.value_or("(nothing)") == "answer to question");
  }
  probe::connection c;
  probe::in_netns(n.a.netns_path, [&] { c = probe::connect_tcp("203.0.113.9", 53); });
  BOOST_TEST(c.ok(), c.error);
  BOOST_TEST(bool(n.dns_tcp.accept_within(std::chrono::milliseconds(2000))));
}

BOOST_AUTO_TEST_CASE(udp_elsewhere_ipv6_and_icmp_are_refused_at_once) {
  auto& n = the_node();
  std::optional<std::string> answer;
  int refused = 0;
  probe::in_netns(n.a.netns_path,
                  [&] { answer = probe::udp_exchange("198.51.100.7", 9999, "x", &refused); });
  BOOST_TEST(!answer.has_value());
  BOOST_TEST(refused == ECONNREFUSED);
  probe::in_netns(n.a.netns_path, [&] {
    answer = probe::udp_exchange(n.a.host_address, n.control_udp.port, "x", &refused);
  });
  BOOST_TEST(!n.control_udp.receive_within(std::chrono::milliseconds(200)));
  BOOST_TEST(refused == ECONNREFUSED);

  probe::connection c6;
  auto start = std::chrono::steady_clock::now();
  probe::in_netns(n.a.netns_path, [&] { c6 = probe::connect_tcp("2001:db8::1", 80); });
  BOOST_TEST(!c6.ok());
  BOOST_TEST(c6.errno_value == ECONNREFUSED, c6.error);
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(2)));
  BOOST_TEST(!n.proxy.accept_within(std::chrono::milliseconds(100)));

  bool echoed = true;
  probe::in_netns(n.a.netns_path, [&] { echoed = probe::icmp_echo(n.a.host_address); });
  BOOST_TEST(!echoed);
}

BOOST_AUTO_TEST_CASE(a_sandbox_cannot_send_as_another_address) {
  auto& n = the_node();
  // The links' strict reverse-path filter drops such packets too; with it off for the
  // while, this shows the table's own check.
  const std::string rp = "net.ipv4.conf." + n.a.host_interface + ".rp_filter";
  check_shell("sysctl -qw " + rp + "=0 net.ipv4.conf.all.rp_filter=0");
  check_shell("nsenter --net=" + n.a.netns_path + " ip addr add " + n.b.sandbox_address +
              "/32 dev eth0");
  probe::connection c;
  probe::in_netns(n.a.netns_path, [&] {
    c = probe::connect_tcp("198.51.100.7", 80, n.b.sandbox_address, std::chrono::milliseconds(500));
    // A datagram needs no answer to arrive: it must not reach the resolver.
    probe::fd_handle u(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    socklen_t len = 0;
    auto from = probe::sockaddr_of(n.b.sandbox_address, 0, len);
    ::bind(u.get(), reinterpret_cast<sockaddr*>(&from), len);
    auto to = probe::sockaddr_of(n.a.host_address, 53, len);
    ::sendto(u.get(), "spoofed", 7, 0, reinterpret_cast<sockaddr*>(&to), len);
  });
  BOOST_TEST(!n.dns_udp.receive_within(std::chrono::milliseconds(300)));
  check_shell("nsenter --net=" + n.a.netns_path + " ip addr del " + n.b.sandbox_address +
              "/32 dev eth0");
  check_shell("sysctl -qw " + rp + "=1");
  BOOST_TEST(!c.ok());
  BOOST_TEST(!n.proxy.accept_within(std::chrono::milliseconds(100)));
}

BOOST_AUTO_TEST_CASE(the_proxy_and_resolver_ports_serve_links_only) {
  auto& n = the_node();
  auto from_outside = [&](std::uint16_t port) {
    probe::connection c;
    n.outside.enter(
      [&] { c = probe::connect_tcp("10.99.0.1", port, "", std::chrono::milliseconds(500)); });
    return c;
  };
  BOOST_TEST(from_outside(n.control.port).ok());
  BOOST_TEST(bool(n.control.accept_within(std::chrono::milliseconds(1000))));
  BOOST_TEST(!from_outside(n.proxy.port).ok());
  BOOST_TEST(!from_outside(n.dns_tcp.port).ok());
  auto local = probe::connect_tcp("127.0.0.1", n.proxy.port, "", std::chrono::milliseconds(500));
  BOOST_TEST(!local.ok());
  BOOST_TEST(!n.proxy.accept_within(std::chrono::milliseconds(100)));
  BOOST_TEST(!n.dns_tcp.accept_within(std::chrono::milliseconds(100)));
}

BOOST_AUTO_TEST_CASE(nothing_is_forwarded_to_a_link) {
  auto& n = the_node();
  std::unique_ptr<listener> inside;
  probe::in_netns(n.b.netns_path,
                  [&] { inside = std::make_unique<listener>("0.0.0.0", SOCK_STREAM); });
  probe::connection c;
  n.outside.enter([&] {
    c = probe::connect_tcp(n.b.sandbox_address, inside->port, "", std::chrono::milliseconds(500));
  });
  BOOST_TEST(!c.ok());
  BOOST_TEST(!inside->accept_within(std::chrono::milliseconds(100)));
  // A datagram needs no answer to arrive: it must not reach the sandbox either.
  std::unique_ptr<listener> inside_udp;
  probe::in_netns(n.b.netns_path,
                  [&] { inside_udp = std::make_unique<listener>("0.0.0.0", SOCK_DGRAM); });
  n.outside.enter([&] { probe::udp_exchange(n.b.sandbox_address, inside_udp->port, "in"); });
  BOOST_TEST(!inside_udp->receive_within(std::chrono::milliseconds(100)));
  // The node itself reaches it (exposed ports are connections sandboxd makes), and the
  // replies pass.
  auto own = probe::connect_tcp(n.b.sandbox_address, inside->port);
  BOOST_TEST(own.ok(), own.error);
  auto accepted = inside->accept_within(std::chrono::milliseconds(1000));
  BOOST_TEST_REQUIRE(accepted);
  BOOST_TEST(::write(accepted.get(), "hi", 2) == 2);
  BOOST_TEST(probe::read_some(own.fd.get(), std::chrono::milliseconds(1000)) == "hi");
}

BOOST_AUTO_TEST_CASE(a_link_taken_out_of_the_table_reaches_nothing) {
  auto& n = the_node();
  BOOST_TEST_REQUIRE(n.nft.run(network::remove_link_rules(n.params, node::entry(n.b))).ok());
  probe::connection c;
  probe::in_netns(n.b.netns_path, [&] {
    c = probe::connect_tcp("198.51.100.7", 80, "", std::chrono::milliseconds(500));
  });
  BOOST_TEST(!c.ok());
  BOOST_TEST(!n.proxy.accept_within(std::chrono::milliseconds(100)));
  BOOST_TEST_REQUIRE(n.nft.run(network::add_link_rules(n.params, node::entry(n.b))).ok());
  probe::in_netns(n.b.netns_path, [&] { c = probe::connect_tcp("198.51.100.7", 80); });
  BOOST_TEST(c.ok(), c.error);
  BOOST_TEST(accept_one(n.proxy).original.has_value());
}

BOOST_AUTO_TEST_CASE(loading_the_table_again_replaces_it) {
  auto& n = the_node();
  BOOST_TEST_REQUIRE(n.nft.run(network::egress_ruleset(n.params, {node::entry(n.a)})).ok());
  probe::connection c;
  probe::in_netns(n.b.netns_path, [&] {
    c = probe::connect_tcp("198.51.100.7", 80, "", std::chrono::milliseconds(500));
  });
  BOOST_TEST(!c.ok()); // b is no longer in the sets
  BOOST_TEST(!n.proxy.accept_within(std::chrono::milliseconds(100)));
  BOOST_TEST_REQUIRE(
    n.nft.run(network::egress_ruleset(n.params, {node::entry(n.a), node::entry(n.b)})).ok());
  BOOST_TEST_REQUIRE(n.nft.run(network::delete_ruleset(n.params)).ok());
  // Without the table a link reaches its host side's other ports: the table is what closes
  // them (this also shows the tests above test the table, not the links).
  probe::in_netns(n.a.netns_path,
                  [&] { c = probe::connect_tcp(n.a.host_address, n.control.port); });
  BOOST_TEST(c.ok(), c.error);
  BOOST_TEST(bool(n.control.accept_within(std::chrono::milliseconds(1000))));
  BOOST_TEST_REQUIRE(
    n.nft.run(network::egress_ruleset(n.params, {node::entry(n.a), node::entry(n.b)})).ok());
}

BOOST_AUTO_TEST_SUITE_END()
