// host_jail — the runtime and attack tests run as root and drive code that mounts,
// writes and deletes below a data directory. A test binary that includes this header
// moves, before its first test, into a private mount namespace in which every host
// filesystem is read-only except /tmp (where test directories live), /dev, /proc, /run
// and the cgroup filesystems. A bug in a destructive path (or a bug planted to prove a
// test) can then harm nothing but /tmp: never /etc, /usr, /root or the source tree.
//
// Mounts the tests make live in this namespace and vanish with it; the guardian
// (forked from the test) cleans up inside the same namespace. Without root the binary
// stays where it is (the runtime tests skip anyway).
#pragma once

#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdexcept>
#include <string>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sandboxd::test {

inline void set_mount_attr(const char* path, std::uint64_t set, std::uint64_t clear) {
  mount_attr a{};
  a.attr_set = set;
  a.attr_clr = clear;
  if (::syscall(SYS_mount_setattr, AT_FDCWD, path, AT_RECURSIVE, &a, sizeof a) != 0 &&
      errno != ENOENT)
    throw std::runtime_error(std::string("host jail: mount_setattr ") + path + ": " +
                             std::strerror(errno));
}

inline void enter_host_jail() {
  if (::geteuid() != 0)
    return;
  const char* writable[] = {"/tmp", "/dev", "/proc", "/run", "/sys/fs/cgroup"};
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    throw std::runtime_error(std::string("host jail: ") + std::strerror(errno));
  // Each writable tree becomes a mount of its own (a bind onto itself), so that its flag
  // can differ from the root's.
  for (const char* p : writable)
    if (::access(p, F_OK) == 0 && ::mount(p, p, nullptr, MS_BIND | MS_REC, nullptr) != 0)
      throw std::runtime_error(std::string("host jail: bind ") + p + ": " + std::strerror(errno));
  set_mount_attr("/", MOUNT_ATTR_RDONLY, 0);
  for (const char* p : writable)
    set_mount_attr(p, 0, MOUNT_ATTR_RDONLY);
  // Proof that the jail holds before any test runs.
  if (::access("/etc", W_OK) == 0 || errno != EROFS)
    throw std::runtime_error("host jail: /etc is still writable; refusing to run");
}

struct host_jail {
  host_jail() { enter_host_jail(); }
};

} // namespace sandboxd::test

using sandboxd_host_jail = sandboxd::test::host_jail;
BOOST_TEST_GLOBAL_FIXTURE(sandboxd_host_jail);
