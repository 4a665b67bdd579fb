// The guard under every recursive delete and every metered walk (runtime/tree_walk.hpp,
// names.hpp's require_plain_component, removal_queue, sandbox_dir): a name that is not
// one plain component is refused before anything is touched, a symlink is deleted or
// counted as itself and never followed, a mount point is never entered, a tree nested
// past PATH_MAX is walked whole. Every escape aims at a canary inside this test's own
// directory, so even a broken guard can only harm the test's files.
#define BOOST_TEST_MODULE tree_walk
#include <boost/test/unit_test.hpp>

#include "runtime/removal_queue.hpp"
#include "runtime/sandbox_record.hpp"
#include "runtime/tree_walk.hpp"
#include "runtime/unique_fd.hpp"
#include "tests/runtime/host_jail.hpp"
#include "tests/support/temp_dir.hpp"

#include <climits>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <sys/mount.h>
#include <unistd.h>

using namespace sandboxd::runtime;
using sandboxd::test::temp_dir;
namespace fs = std::filesystem;

namespace {

struct fixture {
  temp_dir dir{"tree-walk"};
  std::string top = dir.path() + "/top"; // the directory the guarded calls work below
  std::string canary_dir = dir.path() + "/canary";
  unique_fd top_fd;

  fixture() {
    fs::create_directories(top + "/victim/sub");
    fs::create_directories(canary_dir);
    std::ofstream(canary_dir + "/keep") << std::string(5000, 'k');
    std::ofstream(top + "/victim/sub/f") << "abc";
    top_fd = unique_fd(::open(top.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    BOOST_TEST_REQUIRE(top_fd.get() >= 0);
  }

  bool canary_intact() const {
    std::ifstream in(canary_dir + "/keep");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    return s == std::string(5000, 'k');
  }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(names_that_are_not_one_plain_component_are_refused, fixture) {
  for (std::string bad : std::vector<std::string>{"..", ".", "", "../canary", "victim/..", "/",
                                                  "victim/sub", std::string("victim\0x", 8)}) {
    BOOST_CHECK_THROW(remove_tree_at(top_fd.get(), bad), std::invalid_argument);
    BOOST_CHECK_THROW(tree_bytes_at(top_fd.get(), bad), std::invalid_argument);
    BOOST_CHECK_THROW(sandbox_dir(top, bad), std::invalid_argument);
  }
  BOOST_TEST(canary_intact());
  BOOST_TEST(fs::exists(top + "/victim/sub/f"));
  remove_tree_at(top_fd.get(), "victim");
  BOOST_TEST(!fs::exists(top + "/victim"));
  remove_tree_at(top_fd.get(), "victim"); // missing is fine
}

BOOST_FIXTURE_TEST_CASE(symlinks_are_removed_and_counted_as_themselves, fixture) {
  fs::create_directory_symlink(canary_dir, top + "/victim/abs");
  fs::create_directory_symlink("../../../canary", top + "/victim/sub/rel");
  fs::create_symlink(canary_dir + "/keep", top + "/victim/file-link");
  std::uint64_t links =
    canary_dir.size() + std::string("../../../canary").size() + (canary_dir + "/keep").size();
  BOOST_TEST(tree_bytes_at(top_fd.get(), "victim") == 3u + links);
  remove_tree_at(top_fd.get(), "victim");
  BOOST_TEST(!fs::exists(top + "/victim"));
  BOOST_TEST(canary_intact());
  // A symlink where the tree itself is expected is deleted as a link.
  fs::create_directory_symlink(canary_dir, top + "/victim");
  remove_tree_at(top_fd.get(), "victim");
  BOOST_TEST(!fs::exists(fs::symlink_status(top + "/victim")));
  BOOST_TEST(canary_intact());
}

BOOST_FIXTURE_TEST_CASE(a_mount_point_inside_is_never_entered, fixture,
                        *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                          boost::test_tools::assertion_result r(::geteuid() == 0);
                          r.message() << "bind mounts need root";
                          return r;
                        })) {
  fs::create_directories(top + "/victim/mnt");
  BOOST_TEST_REQUIRE(
    ::mount(canary_dir.c_str(), (top + "/victim/mnt").c_str(), nullptr, MS_BIND, nullptr) == 0);
  struct unmount {
    std::string p;
    ~unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } u{top + "/victim/mnt"};
  BOOST_TEST(tree_bytes_at(top_fd.get(), "victim") == 3u); // the mount is skipped
  BOOST_CHECK_THROW(remove_tree_at(top_fd.get(), "victim"), std::system_error);
  BOOST_TEST(canary_intact());
}

BOOST_FIXTURE_TEST_CASE(a_tree_nested_past_path_max_is_walked_and_removed_whole, fixture) {
  // 2,000 levels of a 9-character name: about 20,000 bytes of path, five times PATH_MAX.
  {
    unique_fd cur(::open((top + "/victim").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    for (int i = 0; i < 2000; ++i) {
      BOOST_TEST_REQUIRE(::mkdirat(cur.get(), "deeplevel", 0755) == 0);
      cur = unique_fd(::openat(cur.get(), "deeplevel", O_PATH | O_DIRECTORY | O_CLOEXEC));
      BOOST_TEST_REQUIRE(cur.get() >= 0);
    }
    unique_fd f(::openat(cur.get(), "bottom", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    BOOST_TEST_REQUIRE(::write(f.get(), std::string(1 << 20, 'b').data(), 1 << 20) == 1 << 20);
  }
  static_assert(2000 * 10 > PATH_MAX);
  BOOST_TEST(tree_bytes_at(top_fd.get(), "victim") == 3u + (1u << 20));
  remove_tree_at(top_fd.get(), "victim");
  BOOST_TEST(!fs::exists(top + "/victim"));
  BOOST_TEST(canary_intact());
}

BOOST_FIXTURE_TEST_CASE(the_removal_queue_refuses_paths_outside_its_data_directory, fixture) {
  removal_queue q(top);
  for (std::string bad : std::vector<std::string>{canary_dir, top + "/../canary", top + "/./victim",
                                                  top + "/victim/../..", top, top + "/",
                                                  top + "x/victim", "relative"}) {
    BOOST_CHECK_THROW(q.take(bad), std::invalid_argument);
    BOOST_CHECK_THROW(q.reuse(bad), std::invalid_argument);
  }
  fs::create_directory_symlink(canary_dir, top + "/link");
  BOOST_CHECK_THROW(q.take(top + "/link/keep"), std::system_error); // no symlink followed
  q.drain();
  BOOST_TEST(canary_intact());
  BOOST_TEST(fs::exists(top + "/victim/sub/f"));
}
