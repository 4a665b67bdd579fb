// test_network_e2e — sandbox networks through the sandboxd and sandboxctl binaries: a config
// file's [network] (a link range, the upstream resolver, an allow-list ceiling), `sandboxctl
// create --allow` on crun, what the sandbox then reaches and what it does not, a policy above
// the ceiling refused with permission_denied, the connection events in `sandboxctl events`,
// and nothing left of the links and the egress table after delete and stop.
//
// The binary runs in a network namespace of its own (the daemon it starts too), with the
// test's own "internet" beside it (tests/network/test_internet.hpp).
#define BOOST_TEST_MODULE network_e2e
#include <boost/test/unit_test.hpp>

#include "tests/e2e/e2e_support.hpp"
#include "tests/network/test_internet.hpp"
#include "tests/support/private_netns.hpp"

#include <fstream>

using namespace sandboxd::test;

namespace {

// `sandboxctl exec ID -- /bin/sh -c SCRIPT`: its stdout (whatever its exit code).
std::string sh(const daemon_process& d, const std::string& id, const std::string& script) {
  return ctl(d, {"exec", id, "--", "/bin/sh", "-c", script}).out;
}

std::string http(const daemon_process& d, const std::string& id, const std::string& address,
                 const std::string& host) {
  return sh(d, id,
            "printf 'GET / HTTP/1.0\\r\\nHost: " + host + "\\r\\n\\r\\n' | nc -w 5 " + address +
              " 80 2>/dev/null; true");
}

} // namespace

BOOST_AUTO_TEST_CASE(sandboxctl_create_allow_reaches_only_what_it_allows,
                     *utf::precondition(crun_can_run)) {
  internet world;
  temp_dir conf("network-e2e");
  const std::string config = conf / "sandboxd.toml";
  std::ofstream(config) << "[network]\nlink_range = \"10.202.0.0/24\"\n"
                           "upstream_dns = \"198.51.100.2\"\nceiling = \"allowlist\"\n";
  {
    daemon_process d({"--runtime", "crun", "--config", config});
    const auto id = create(d, {"--runtime", "crun", "--allow", "allowed.test:80"});
    BOOST_TEST(sh(d, id, "nslookup allowed.test 2>&1; true").find("198.51.100.2") !=
               std::string::npos);
    const auto page = http(d, id, "198.51.100.2", "allowed.test");
    BOOST_TEST(page.find("hello allowed.test at 198.51.100.2") != std::string::npos, page);
    BOOST_TEST(http(d, id, "198.51.100.3", "allowed.test").empty()); // forged Host
    BOOST_TEST(sh(d, id, "nslookup other.test 2>&1; true").find("198.51.100.3") ==
               std::string::npos);
    // Above the ceiling: permission_denied, nothing made.
    auto all = ctl(d, {"create", "--runtime", "crun", "--network", "all"});
    BOOST_TEST(all.exit_code == 203, all);
    BOOST_TEST(all.err.find("ceiling") != std::string::npos, all);
    // A rule that does not parse: invalid_argument naming it.
    auto bad = ctl(d, {"create", "--runtime", "crun", "--allow", "10.1.2.3/16"});
    BOOST_TEST(bad.exit_code == 204, bad);
    BOOST_TEST(bad.err.find("10.1.2.3/16") != std::string::npos, bad);
    // The log has each attempt.
    std::map<std::string, int> kinds;
    BOOST_TEST(eventually([&] {
      kinds.clear();
      for (const auto& e : ctl(d, {"--json", "events", id}).lines())
        ++kinds[e.value("kind", "")];
      return kinds["connection_closed"] == 1;
    }));
    BOOST_TEST(kinds["connection_opened"] == 1);
    BOOST_TEST(kinds["connection_denied"] >= 2); // the forged Host, other.test
    ctl_ok(d, {"delete", id});
    BOOST_TEST(d.stop() == 0);
  }
  BOOST_TEST(run_shell("ip -o link show | grep -c ' sx' || true").output == "0\n");
  BOOST_TEST(run_shell("nft list tables").output.find("sandboxd_") == std::string::npos);
  for (const auto& s : world.served())
    BOOST_TEST(s == "198.51.100.2 allowed.test");
}
