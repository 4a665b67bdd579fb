// layer_pool: a pool destroyed while an overlay still has its upper directory in it (a
// running or frozen sandbox that outlives its driver) stays mounted, and the next pool on
// the same data directory takes that mount over: the sandbox's writable layer is the one
// the new pool sees, and the image is mounted once. Without an overlay, destroying the pool
// unmounts it (its layers stay in the image for the next pool).
#define BOOST_TEST_MODULE layer_pool
#include <boost/test/unit_test.hpp>

#include "runtime/layer_pool.hpp"
#include "runtime/overlay_mount.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace rt = sandboxd::runtime;

namespace {

boost::test_tools::assertion_result pools_here(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (::geteuid() != 0) {
    r = false;
    r.message() << "loop-mounting a btrfs image needs root";
  } else if (auto why = rt::layer_pool::unavailable()) {
    r = false;
    r.message() << *why;
  }
  return r;
}

// How many mounts in this namespace have `dir` as their mount point.
int mounts_on(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    f >> id >> parent >> dev >> root >> point;
    n += point == dir;
  }
  return n;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

rt::layer_pool_options options_in(const std::string& data) {
  rt::layer_pool_options o;
  o.data_dir = data;
  o.pool_bytes = 256ull << 20;
  o.default_layer_bytes = 0;
  return o;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_pool_under_a_mounted_overlay_stays_mounted_for_the_next_pool,
                     *boost::unit_test::precondition(pools_here)) {
  sandboxd::test::temp_dir dir("layer-pool");
  const std::string data = dir / "data", pool_dir = data + "/layers";
  std::filesystem::create_directories(data);
  std::filesystem::create_directories(dir / "lower");
  std::filesystem::create_directories(dir / "merged");
  std::ofstream(dir / "lower/template.txt") << "template\n";

  auto pool = std::make_unique<rt::layer_pool>(options_in(data));
  pool->create("sb1", 0, 0, 0);
  const rt::overlay_dirs ov{dir / "lower", pool->upper("sb1"), pool->work("sb1"), dir / "merged"};
  rt::mount_overlay(ov);
  std::ofstream(dir / "merged/before.txt") << "before\n";
  pool.reset(); // the driver goes; its sandbox keeps running on the overlay

  BOOST_TEST(mounts_on(pool_dir) == 1); // still mounted, and only once
  auto next = std::make_unique<rt::layer_pool>(options_in(data));
  BOOST_TEST(mounts_on(pool_dir) == 1); // taken over, not mounted a second time
  BOOST_TEST_REQUIRE(next->exists("sb1"));
  // The overlay's writable layer is the one the new pool holds: what the sandbox wrote
  // before and after is there.
  std::ofstream(dir / "merged/after.txt") << "after\n";
  rt::unmount_overlay(ov, true);
  BOOST_TEST(read(next->upper("sb1") + "/before.txt") == "before\n");
  BOOST_TEST(read(next->upper("sb1") + "/after.txt") == "after\n");
  // And the overlay mounts again over the new pool's directories (a filesystem resume).
  rt::mount_overlay(ov);
  BOOST_TEST(read(dir / "merged/after.txt") == "after\n");
  BOOST_TEST(read(dir / "merged/template.txt") == "template\n");
  rt::unmount_overlay(ov, false);

  // No overlay left: destroying the pool unmounts it, its layer stays in the image.
  next.reset();
  BOOST_TEST(mounts_on(pool_dir) == 0);
  auto last = std::make_unique<rt::layer_pool>(options_in(data));
  BOOST_TEST(last->exists("sb1"));
  last->remove("sb1");
  last.reset();
  BOOST_TEST(mounts_on(pool_dir) == 0);
}
