// private_netns — a test binary that includes this header moves, before its first test,
// into a network namespace of its own with only its loopback up: the links, servers and
// rules it makes live there and vanish with the process, and nothing it sends can leave
// the machine (no route leads out). Without root the binary stays where it is (the tests
// that need it skip anyway).
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <sched.h>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace sandboxd::test {

inline void enter_private_netns() {
  if (::geteuid() != 0)
    return;
  if (::unshare(CLONE_NEWNET) != 0)
    throw std::runtime_error("private netns: unshare(CLONE_NEWNET) failed");
  if (std::system("ip link set lo up") != 0)
    throw std::runtime_error("private netns: cannot bring up lo");
}

struct private_netns_fixture {
  private_netns_fixture() { enter_private_netns(); }
};

BOOST_TEST_GLOBAL_FIXTURE(private_netns_fixture);

} // namespace sandboxd::test
