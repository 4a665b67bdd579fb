// test_node_network — sandbox networks through a real node (docs/network.md): crun sandboxes
// with an allow list reach what it allows through sandboxd's egress proxy and resolver, and
// nothing else, and every attempt is an event in the sandbox's log.
//
// The binary runs in a network namespace of its own (tests/support/private_netns.hpp): the
// node, its links and the egress table live there. Its "internet" is another namespace the
// test makes, joined to the node by a veth pair: a DNS server (network/dns_message on a
// thread) and HTTP servers on 198.51.100.2 and .3, a UDP sink on port 9999. Nothing any
// sandbox sends can leave this machine.
#define BOOST_TEST_MODULE node_network
#include <boost/test/unit_test.hpp>

#include "network/dns_message.hpp"
#include "node/egress.hpp"
#include "node/node.hpp"
#include "tests/network/client_hello.hpp"
#include "tests/network/test_internet.hpp"
#include "tests/node/node_checks.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/private_netns.hpp"

#include <arpa/inet.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>

using namespace sandboxd::test;
namespace cmd = sandboxd::actors::cmd;
namespace net = sandboxd::network;

namespace {

boost::test_tools::assertion_result as_root(boost::unit_test::test_unit_id id) {
  boost::test_tools::assertion_result r(::geteuid() == 0);
  if (!r) {
    r.message() << "needs root (network namespaces, nftables, crun)";
    return r;
  }
  return postgres_installed(id);
}

nd::node_config network_config(const node_dir& dir,
                               ev::runtime_kind kind = ev::runtime_kind::crun) {
  auto c = node_config_for(dir, {kind}, true, test_log::file);
  c.network.link_range = "10.201.0.0/24";
  c.network.upstream_dns = "198.51.100.2";
  return c;
}

ac::command create_with(std::vector<std::string> allow,
                        ev::runtime_kind kind = ev::runtime_kind::crun) {
  auto c = create_command(kind);
  auto& spec = std::get<cmd::create>(c.body).spec;
  spec.network.mode = ev::network_mode::allow_list;
  spec.network.allowed_hosts = std::move(allow);
  return c;
}

// Runs a shell command in the sandbox (on the node's one runtime); its stdout.
std::string sh(nd::node& n, const std::string& id, const std::string& script) {
  return run_in(n, n.runtimes().front(), id, {"/bin/sh", "-c", script}).stdout_data;
}

// `printf REQUEST | nc ADDRESS 80`: what came back (empty when refused).
std::string http_by_nc(nd::node& n, const std::string& id, const std::string& address,
                       const std::string& host, int port = 80) {
  return sh(n, id,
            "printf 'GET / HTTP/1.0\\r\\nHost: " + host + "\\r\\n\\r\\n' | nc -w 5 " + address +
              " " + std::to_string(port) + " 2>/dev/null; true");
}

struct network_events {
  std::vector<ev::connection_opened> opened;
  std::vector<ev::connection_denied> denied;
  std::vector<ev::connection_closed> closed;
};

network_events network_events_of(nd::node& n, const std::string& id) {
  network_events out;
  for (const auto& e : events_of(n.log(), id)) {
    if (auto* o = std::get_if<ev::connection_opened>(&e.body))
      out.opened.push_back(*o);
    if (auto* d = std::get_if<ev::connection_denied>(&e.body))
      out.denied.push_back(*d);
    if (auto* c = std::get_if<ev::connection_closed>(&e.body))
      out.closed.push_back(*c);
  }
  return out;
}

// The denials of `address` (tcp) or of DNS questions for `name`.
std::vector<ev::connection_denied> denials(nd::node& n, const std::string& id,
                                           const std::string& address,
                                           const std::string& name = "") {
  std::vector<ev::connection_denied> out;
  for (const auto& d : network_events_of(n, id).denied)
    if ((!address.empty() && d.destination.address == address) ||
        (!name.empty() && d.destination.name == name))
      out.push_back(d);
  return out;
}

std::string links_on_host() {
  return run_shell("ip -o link show | grep -o ' sx[0-9a-f]*' || true").output;
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_network, *utf::precondition(as_root))

namespace {

// The allow-list attack run on `kind`: allowed, then each denial, then the clean-up.
void allow_list_on(ev::runtime_kind kind) {
  internet world;
  node_dir dir;
  std::string table;
  {
    nd::node n(network_config(dir, kind));
    n.start();
    BOOST_REQUIRE(n.network() != nullptr);
    table = n.network()->table();
    auto r = n.call("", create_with({"allowed.test:80,443", "rebind.test:80"}, kind));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
    const std::string a = r.state.sandbox_id;
    auto rb = n.call("", create_with({"allowed.test:80,443", "rebind.test:80"}, kind));
    BOOST_REQUIRE(rb.ok());
    const std::string b = rb.state.sandbox_id;
    const auto b_link = n.driver(kind)->inspect(b).value().link;
    const auto a_link = n.driver(kind)->inspect(a).value().link;
    BOOST_REQUIRE(a_link && b_link);

    // Allowed: the name through sandboxd's resolver (the sandbox's resolv.conf names its
    // link's host side), then HTTP to the address it gave, the name in Host.
    const auto answer = sh(n, a, "nslookup allowed.test 2>&1; true");
    BOOST_TEST(answer.find("198.51.100.2") != std::string::npos, answer);
    const auto page = http_by_nc(n, a, "198.51.100.2", "allowed.test");
    BOOST_TEST(page.find("hello allowed.test at 198.51.100.2") != std::string::npos, page);
    // A resolver the sandbox names itself: the query still goes to sandboxd's.
    const auto direct = sh(n, a, "nslookup allowed.test 198.51.100.3 2>&1; true");
    BOOST_TEST(direct.find("198.51.100.2") != std::string::npos, direct);

    // TLS: the ClientHello's server name decides; the same name to another name's address
    // (a forged SNI) is denied.
    const auto octal = [](const std::vector<std::uint8_t>& b) {
      std::string out;
      char x[6];
      for (auto c : b) {
        std::snprintf(x, sizeof x, "\\%03o", c);
        out += x;
      }
      return out;
    };
    const auto hello = octal(sandboxd::test::tls::records(
      sandboxd::test::tls::hello_message({sandboxd::test::tls::sni_extension({"allowed.test"})})));
    const auto tls_reply = sh(n, a, "printf '" + hello + "' | nc -w 3 198.51.100.2 443; true");
    BOOST_TEST(tls_reply == "tls-ok\n");
    BOOST_TEST(sh(n, a, "printf '" + hello + "' | nc -w 3 198.51.100.3 443; true") == "");
    BOOST_TEST(world.tls() == std::vector<std::string>{"198.51.100.2"});
    bool sni_denied = false;
    for (const auto& d : denials(n, a, "198.51.100.3"))
      sni_denied = sni_denied ||
                   (d.destination.port == 443 && d.destination.source == ev::name_source::tls_sni &&
                    d.destination.name == "allowed.test");
    BOOST_TEST(sni_denied);

    // DNS rebinding: an allowed name that resolves to a private address is answered, but no
    // connection to that address is allowed by the name.
    BOOST_TEST(sh(n, a, "nslookup rebind.test 2>&1; true").find("10.77.0.2") != std::string::npos);
    BOOST_TEST(http_by_nc(n, a, "10.77.0.2", "rebind.test").empty());
    const auto rebound = denials(n, a, "10.77.0.2");
    BOOST_REQUIRE(!rebound.empty());
    BOOST_TEST(rebound.front().destination.address_class == "private");
    BOOST_TEST(rebound.front().destination.name_resolves);

    // A name not listed: the resolver refuses it, never asks upstream; nothing is served.
    const auto unlisted = sh(n, a, "nslookup unlisted.test 2>&1; true");
    BOOST_TEST(unlisted.find("198.51.100.2") == std::string::npos, unlisted);
    BOOST_TEST(!denials(n, a, "", "unlisted.test").empty());
    BOOST_TEST(http_by_nc(n, a, "198.51.100.2", "unlisted.test").empty());
    // Tunnelling data through names not allowed: nothing reaches the upstream server.
    sh(n, a,
       "nslookup aGVsbG8td29ybGQ.unlisted.test 2>&1; nslookup 'a_b!.allowed.test' 2>&1; true");
    for (const auto& q : world.asked())
      BOOST_TEST(q.find("unlisted") == std::string::npos, q);
    // An allowed name's Host to another name's address (forged): denied, not served.
    sh(n, a, "nslookup other.test 2>&1; true"); // refused: other.test is not listed
    BOOST_TEST(http_by_nc(n, a, "198.51.100.3", "allowed.test").empty());
    const auto forged = denials(n, a, "198.51.100.3");
    BOOST_REQUIRE(!forged.empty());
    BOOST_TEST(forged.front().reason.find("did not answer") != std::string::npos,
               forged.front().reason);
    // The metadata address, the node's own address, the link's host side (a node address
    // too), another sandbox; then the proxy's own port on the host side, dialled directly.
    for (const auto& [address, klass] :
         std::vector<std::pair<std::string, std::string>>{{"169.254.169.254", "link-local"},
                                                          {"198.51.100.1", "node"},
                                                          {a_link->host_address, "node"},
                                                          {b_link->sandbox_address, "sandbox"}}) {
      BOOST_TEST(http_by_nc(n, a, address, "allowed.test").empty(), address);
      const auto d = denials(n, a, address);
      std::string seen;
      for (const auto& x : network_events_of(n, a).denied)
        seen += " " + x.destination.address + ":" + std::to_string(x.destination.port) + "/" +
                x.destination.name;
      BOOST_TEST_REQUIRE(!d.empty(), address << " not among the denials:" << seen);
      BOOST_TEST(d.front().destination.address_class == klass,
                 address << " is " << d.front().destination.address_class);
    }
    BOOST_TEST(
      http_by_nc(n, a, a_link->host_address, "allowed.test", n.network()->proxy_port()).empty());
    // UDP to a port other than DNS: refused on the host, never relayed.
    sh(n, a,
       "echo leak | nc -u -w 1 198.51.100.2 9999; echo leak | nc -u -w 1 198.51.100.2 9999; true");
    BOOST_TEST(world.datagrams() == 0);
    // The internet saw only allowed requests.
    for (const auto& s : world.served())
      BOOST_TEST(s == "198.51.100.2 allowed.test");

    // Every allowed connection was opened and closed with its bytes.
    // (the proxy logs the close once both sides have ended: just after nc returns)
    BOOST_TEST(eventually([&] { return network_events_of(n, a).closed.size() == 2; }));
    const auto evs = network_events_of(n, a);
    BOOST_TEST(evs.opened.size() == 2u);
    BOOST_TEST(evs.closed.size() == evs.opened.size());
    std::uint64_t bytes_in = 0;
    for (const auto& c : evs.closed) {
      BOOST_TEST(c.bytes_in >= 7u); // "tls-ok\n", or the page
      BOOST_TEST(c.bytes_out > 20u);
      bytes_in += c.bytes_in;
    }
    BOOST_TEST(bytes_in > 3000u);
    for (const auto& o : evs.opened) {
      BOOST_TEST(o.rule == "allowed.test:80,443");
      BOOST_TEST(o.destination.name_resolves);
    }

    // The metrics count the same attempts and bytes.
    const auto families = n.probe().Collect();
    BOOST_TEST(metric(families, "sandboxd_egress_attempts_total",
                      {{"protocol", "tcp"}, {"verdict", "allowed"}}) == 2);
    BOOST_TEST(metric(families, "sandboxd_egress_attempts_total",
                      {{"protocol", "tcp"}, {"verdict", "denied"}}) >= 7);
    BOOST_TEST(metric(families, "sandboxd_egress_attempts_total",
                      {{"protocol", "dns"}, {"verdict", "denied"}}) >= 2);
    BOOST_TEST(metric(families, "sandboxd_egress_bytes_total", {{"direction", "in"}}) ==
               double(bytes_in));

    BOOST_REQUIRE(n.call(a, user_command(cmd::remove{})).ok());
    BOOST_REQUIRE(n.call(b, user_command(cmd::remove{})).ok());
    BOOST_TEST(n.network()->links() == 0u);
    n.stop();
  }
  // Nothing left: no link interface, no namespace mount, no table.
  BOOST_TEST(links_on_host() == "");
  BOOST_TEST(mounts_under(dir.data()).empty());
  BOOST_TEST(run_shell("nft list table inet " + table + " 2>&1").exit_code != 0);
}

} // namespace

BOOST_AUTO_TEST_CASE(an_allow_list_reaches_what_it_allows_and_nothing_else_crun,
                     *utf::precondition(runtime_can_run{ev::runtime_kind::crun})) {
  allow_list_on(ev::runtime_kind::crun);
}

BOOST_AUTO_TEST_CASE(an_allow_list_reaches_what_it_allows_and_nothing_else_runsc,
                     *utf::precondition(runtime_can_run{ev::runtime_kind::runsc})) {
  allow_list_on(ev::runtime_kind::runsc);
}

BOOST_AUTO_TEST_CASE(a_restart_loads_the_table_again_and_keeps_a_sandbox_s_link_working) {
  internet world;
  node_dir dir;
  std::string id, table;
  {
    nd::node n(network_config(dir));
    n.start();
    auto r = n.call("", create_with({"allowed.test:80"}));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
    id = r.state.sandbox_id;
    table = n.network()->table();
    n.stop(); // the sandbox is stopped until the next start; its link stays, leading nowhere
  }
  BOOST_TEST(run_shell("nft list table inet " + table + " >/dev/null 2>&1").exit_code == 0);
  // What a crash could leave in the table is replaced at the next start.
  check_shell("nft add rule inet " + table + " forward meta mark 0x5a5a accept");
  BOOST_REQUIRE(run_shell("nft list chain inet " + table + " forward").output.find("5a5a") !=
                std::string::npos);
  {
    nd::node n(network_config(dir));
    n.start();
    BOOST_TEST(n.network()->links() == 1u);
    BOOST_TEST(run_shell("nft list chain inet " + table + " forward").output.find("5a5a") ==
               std::string::npos);
    BOOST_TEST(sh(n, id, "nslookup allowed.test 2>&1; true").find("198.51.100.2") !=
               std::string::npos);
    BOOST_TEST(http_by_nc(n, id, "198.51.100.2", "allowed.test").find("200 OK") !=
               std::string::npos);
    BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
    n.stop();
  }
  BOOST_TEST(links_on_host() == "");
  BOOST_TEST(mounts_under(dir.data()).empty());
  BOOST_TEST(run_shell("nft list table inet " + table + " 2>&1").exit_code != 0);
}

// One sandbox cannot take every proxy thread: past its share its connections are closed at
// once, and another sandbox is still served.
BOOST_AUTO_TEST_CASE(one_sandbox_cannot_take_the_proxy_from_the_others,
                     *utf::precondition(runtime_can_run{ev::runtime_kind::crun})) {
  internet world;
  node_dir dir;
  auto config = network_config(dir);
  config.network.proxy_max_per_sandbox = 3;
  config.network.proxy_max_connections = 16;
  nd::node n(config);
  n.start();
  auto ra = n.call("", create_with({"allowed.test:80,8081"}));
  auto rb = n.call("", create_with({"allowed.test:80,8081"}));
  BOOST_REQUIRE(ra.ok() && rb.ok());
  const auto a = ra.state.sandbox_id, b = rb.state.sandbox_id;
  const std::string request = "printf 'GET / HTTP/1.0\\r\\nHost: allowed.test\\r\\n\\r\\n'";
  BOOST_REQUIRE(sh(n, a, "nslookup allowed.test 2>&1; true").find("198.51.100.2") !=
                std::string::npos);
  // Three connections held open (allowed; the server never answers)...
  sh(n, a,
     "for i in 1 2 3; do (" + request +
       "; sleep 120) 2>/dev/null | nc 198.51.100.2 8081 >/dev/null 2>&1 & done; true");
  BOOST_REQUIRE(eventually([&] { return world.holding() == 3; }));
  // ...a fourth is closed at once, never dialled,
  sh(n, a, request + " | nc -w 3 198.51.100.2 8081 >/dev/null 2>&1; true");
  BOOST_TEST(world.holding() == 3u);
  // and the other sandbox is served.
  BOOST_REQUIRE(sh(n, b, "nslookup allowed.test 2>&1; true").find("198.51.100.2") !=
                std::string::npos);
  BOOST_TEST(http_by_nc(n, b, "198.51.100.2", "allowed.test").find("200 OK") != std::string::npos);
  BOOST_REQUIRE(n.call(a, user_command(cmd::remove{})).ok());
  BOOST_REQUIRE(n.call(b, user_command(cmd::remove{})).ok());
  n.stop();
}

BOOST_AUTO_TEST_SUITE_END()
