// test_sandbox_link — a sandbox with a network (crun, runsc) gets its own namespace and a
// veth pair to the host (runtime/sandbox_link.hpp): it reaches its link's host side and
// names it as its resolver; the link outlives a filesystem pause, is made again when a
// crash took it, and goes with the sandbox. The binary runs in a network namespace of its
// own (tests/support/private_netns.hpp): no packet can leave the machine.
#define BOOST_TEST_MODULE sandbox_link
#include <boost/test/unit_test.hpp>

#include "runtime/sandbox_link.hpp"
#include "tests/runtime/driver_fixture.hpp"
#include "tests/support/private_netns.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace sandboxd::runtime;
using sandboxd::test::driver_usable;

namespace {

struct fixture : sandboxd::test::driver_fixture {
  fixture() {
    oci_options o;
    o.runtime = sandboxd::test::driver_under_test::kind;
    o.data_dir = data;
    o.link_range = "10.200.0.0/24";
    d.reset(); // the fixture's driver, without links, gives way to one on the same directory
    d = std::make_unique<oci_driver>(o);
  }

  network_link networked(const std::string& id) {
    create_request req;
    req.id = id;
    req.network = network_policy::outbound;
    auto c = d->create(req);
    BOOST_TEST_REQUIRE(c.ok(), (c ? "" : c.err().message));
    BOOST_TEST_REQUIRE(c->link.has_value());
    auto s = d->start(id);
    BOOST_TEST_REQUIRE(s.ok(), (s ? "" : s.err().message));
    return *c->link;
  }

  exec_result sh(const std::string& id, const std::string& script) {
    exec_request r;
    r.argv = {"/bin/sh", "-c", script};
    r.timeout = std::chrono::seconds(20);
    auto res = d->exec(id, r);
    BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
    return *res;
  }
};

// A TCP server on `address` that records the first line each connection sends.
struct line_server {
  int fd = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stop{false};
  std::string got;
  std::thread t;

  explicit line_server(const std::string& address) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    BOOST_TEST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    BOOST_TEST_REQUIRE(::listen(fd, 8) == 0);
    socklen_t n = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
    port = ntohs(a.sin_port);
    t = std::thread([this] {
      while (!stop) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0)
          continue;
        int c = ::accept(fd, nullptr, nullptr);
        char buf[256];
        ssize_t k = ::read(c, buf, sizeof buf);
        if (k > 0)
          got.assign(buf, static_cast<std::size_t>(k));
        ::close(c);
      }
    });
  }
  ~line_server() {
    stop = true;
    t.join();
    ::close(fd);
  }
};

bool interface_exists(const std::string& name) {
  return ::if_nametoindex(name.c_str()) != 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sandbox_links, *boost::unit_test::precondition(driver_usable))

BOOST_FIXTURE_TEST_CASE(a_networked_sandbox_reaches_its_host_side_and_names_it_its_resolver,
                        fixture) {
  auto l = networked("net-1");
  BOOST_TEST(l.host_address == "10.200.0.1");
  BOOST_TEST(l.sandbox_address == "10.200.0.2");
  BOOST_TEST(l.interface.rfind("sx", 0) == 0u, l.interface);
  BOOST_TEST(interface_exists(l.interface));
  auto devs = sh("net-1", "cat /proc/net/dev");
  BOOST_TEST(devs.stdout_data.find("eth0") != std::string::npos, devs.stdout_data);
  // Its IPv6 address and route, through which an IPv6 attempt reaches the host side (to be
  // refused there: network/egress_rules.hpp).
  auto v6 = sh("net-1", "cat /proc/net/if_inet6; cat /proc/net/ipv6_route");
  BOOST_TEST(v6.stdout_data.find("fd7362780000000000000000") != std::string::npos, v6.stdout_data);
  auto resolv = sh("net-1", "cat /etc/resolv.conf");
  BOOST_TEST(resolv.stdout_data.find("nameserver 10.200.0.1") != std::string::npos,
             resolv.stdout_data);
  line_server server(l.host_address);
  auto sent = sh("net-1", "echo hello-from-net-1 | nc -w 5 " + l.host_address + " " +
                            std::to_string(server.port));
  BOOST_TEST(sent.exit_code == 0, sent.stderr_data);
  for (int i = 0; i < 50 && server.got.empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BOOST_TEST(server.got.find("hello-from-net-1") != std::string::npos, server.got);
  auto info = d->inspect("net-1");
  BOOST_TEST_REQUIRE(info.ok());
  BOOST_TEST((info->link == l));
}

BOOST_FIXTURE_TEST_CASE(two_sandboxes_get_distinct_links_and_remove_takes_each_away, fixture) {
  auto a = networked("net-a");
  auto b = networked("net-b");
  BOOST_TEST(a.interface != b.interface);
  BOOST_TEST(a.sandbox_address != b.sandbox_address);
  BOOST_TEST(a.netns_path != b.netns_path);
  BOOST_TEST_REQUIRE(d->remove("net-a").ok());
  BOOST_TEST(!interface_exists(a.interface));
  BOOST_TEST(::access(a.netns_path.c_str(), F_OK) != 0);
  BOOST_TEST(interface_exists(b.interface));
}

BOOST_FIXTURE_TEST_CASE(the_link_outlives_a_filesystem_pause_and_is_made_again_if_lost, fixture) {
  auto l = networked("net-p");
  BOOST_TEST_REQUIRE(d->pause("net-p", pause_mode::filesystem).ok());
  BOOST_TEST(interface_exists(l.interface));
  // A crash (or a reboot) took the link while the sandbox was paused.
  sandbox_link gone;
  gone.netns_path = l.netns_path;
  gone.host_interface = l.interface;
  remove_link(gone);
  BOOST_TEST_REQUIRE(!interface_exists(l.interface));
  auto r = d->resume("net-p");
  BOOST_TEST_REQUIRE(r.ok(), (r ? "" : r.err().message));
  BOOST_TEST(interface_exists(l.interface));
  line_server server(l.host_address);
  auto sent =
    sh("net-p", "echo back | nc -w 5 " + l.host_address + " " + std::to_string(server.port));
  BOOST_TEST(sent.exit_code == 0, sent.stderr_data);
}

BOOST_AUTO_TEST_CASE(link_slots_number_disjoint_blocks) {
  auto r = parse_link_range("10.200.0.0/16");
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST(r->slots() == 16384u);
  auto first = link_of(*r, 0, "1a2b3c4d", "/x/0");
  auto last = link_of(*r, 16383, "1a2b3c4d", "/x/1");
  BOOST_TEST(first.host_address == "10.200.0.1");
  BOOST_TEST(first.sandbox_address == "10.200.0.2");
  BOOST_TEST(last.host_address == "10.200.255.253");
  BOOST_TEST(last.sandbox_address == "10.200.255.254");
  // "sx", the instance's first 6 characters, the /30's number in its /10 (10.200.0.0 >> 2).
  BOOST_TEST(first.host_interface == "sx1a2b3c20000");
  BOOST_TEST(last.host_interface == "sx1a2b3c23fff");
  BOOST_TEST(first.sandbox_address6 == "fd73:6278::ac8:2");
  // Two drivers with disjoint ranges never name two links alike.
  auto other = parse_link_range("10.201.0.0/16");
  BOOST_TEST(link_of(*other, 0, "1a2b3c4d", "/x/2").host_interface != first.host_interface);
  BOOST_TEST(last.host_interface.size() < std::size_t(IFNAMSIZ));
  BOOST_TEST(!parse_link_range("10.200.0.1/16").has_value());
  BOOST_TEST(!parse_link_range("10.200.0.0/31").has_value());
  BOOST_TEST(!parse_link_range("2001:db8::/64").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
