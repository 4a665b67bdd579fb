// driver_fixture — what every runtime test starts from: a data directory under
// /tmp/sandboxd-test-*, the driver under test on it, and two clean-ups. Including it puts
// the test binary in the host jail (host_jail.hpp): only /tmp and the kernel's own
// filesystems are writable for it. The fixture's
// destructor removes every sandbox through the driver; a guardian process also removes
// containers, mounts, cgroups and the directory if the test binary dies (a timeout's
// SIGKILL), so no test leaves anything behind even when it fails.
#pragma once

#include "tests/runtime/driver_under_test.hpp"
#include "tests/runtime/host_jail.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <sys/stat.h>

namespace sandboxd::test {

// A Boost.Test precondition: skips the suite, saying why, when the driver cannot run.
inline boost::test_tools::assertion_result driver_usable(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (auto why = driver_under_test::unavailable()) {
    r = false;
    r.message() << "driver cannot run on this machine: " << *why;
  }
  return r;
}

struct driver_fixture {
  temp_dir dir{"runtime"};
  // Searchable by others: sandboxes (unprivileged host users) reach their root through it.
  bool searchable = ::chmod(dir.path().c_str(), 0711) == 0;
  std::string data = dir.path() + "/data";
  guardian cleanup{crash_cleanup(dir.path())};
  std::unique_ptr<runtime::driver> d = driver_under_test::make(data);

  ~driver_fixture() {
    if (auto all = d->list())
      for (auto& s : all.value())
        d->remove(s.id);
  }

  // Creates and starts a sandbox; fails the test if either step fails.
  void running(const std::string& id, runtime::limits l = {}) {
    runtime::create_request req;
    req.id = id;
    req.limits = l;
    auto c = d->create(req);
    BOOST_TEST_REQUIRE(c.ok(), (c ? "" : c.err().message));
    auto s = d->start(id);
    BOOST_TEST_REQUIRE(s.ok(), (s ? "" : s.err().message));
  }

  runtime::sandbox_status status(const std::string& id) {
    auto i = d->inspect(id);
    BOOST_TEST_REQUIRE(i.ok(), (i ? "" : i.err().message));
    return i->status;
  }

  // Deletes every container in the test's runtime state, unmounts everything mounted
  // below the test directory (overlays, idmapped templates, the layer pool, deepest
  // first) and removes the test's cgroups, then the directory. It refuses to touch any
  // directory that is not a test directory under /tmp.
  static std::string crash_cleanup(const std::string& top) {
    std::string q = shell_quote(top);
    return "case " + q + " in /tmp/sandboxd-test-*) ;; *) exit 1;; esac; " +
           "for rt in crun runsc; do s=" + q + "/data/state/$rt; [ -d \"$s\" ] || continue; " +
           "for id in $($rt --root=\"$s\" list --quiet); do " +
           "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; " +
           "$0 --root=\"$1\" delete --force \"$2\"' $rt \"$s\" \"$id\"; done; done " +
           ">/dev/null 2>&1; awk '{print $5}' /proc/self/mountinfo | grep -F " +
           shell_quote(top + "/") + " | sort -r | while read m; do umount -l \"$m\"; done; " +
           "rm -rf " + q;
  }
};

} // namespace sandboxd::test
