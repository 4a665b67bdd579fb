// The background deletion of removed sandboxes' directories (runtime/removal_queue.hpp):
// a taken path is gone at once, its tree is deleted by drain(), leftovers of an earlier
// process are swept, the destructor finishes pending work, a path that cannot be moved
// is reported and left as it was; a recyclable sandbox directory becomes a spare
// skeleton with nothing of the old sandbox in it, and only a clean one does.
#define BOOST_TEST_MODULE removal_queue
#include <boost/test/unit_test.hpp>

#include "runtime/removal_queue.hpp"
#include "tests/runtime/host_jail.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

using namespace sandboxd::runtime;
using sandboxd::test::temp_dir;
namespace fs = std::filesystem;

namespace {

// A small tree like a sandbox's directory: nested directories and files.
void make_tree(const fs::path& root) {
  fs::create_directories(root / "upper/workspace/deep");
  fs::create_directories(root / "work/work");
  std::ofstream(root / "sandbox.json") << "{}";
  std::ofstream(root / "upper/workspace/deep/f.txt") << std::string(100000, 'x');
}

} // namespace

BOOST_AUTO_TEST_CASE(a_taken_tree_leaves_its_place_at_once_and_is_deleted_by_drain) {
  temp_dir dir("removal-queue");
  removal_queue q(dir.path());
  for (int i = 0; i < 5; ++i)
    make_tree(dir.path() + "/sb" + std::to_string(i));
  for (int i = 0; i < 5; ++i) {
    q.take(dir.path() + "/sb" + std::to_string(i));
    BOOST_TEST(!fs::exists(dir.path() + "/sb" + std::to_string(i)));
  }
  make_tree(dir.path() + "/sb0"); // the name is free again at once
  q.take(dir.path() + "/sb0");
  q.drain();
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}

BOOST_AUTO_TEST_CASE(leftovers_of_an_earlier_process_are_swept) {
  temp_dir dir("removal-queue");
  make_tree(dir.path() + "/removing/old.123.456.0");
  make_tree(dir.path() + "/removing/older.1.2.3");
  make_tree(dir.path() + "/spare/spare.1.2.3"); // not stripped by this process: not trusted
  removal_queue q(dir.path());
  q.drain();
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
  BOOST_TEST(fs::is_empty(dir.path() + "/spare"));
  BOOST_TEST(!q.reuse(dir.path() + "/new"));
}

BOOST_AUTO_TEST_CASE(the_destructor_finishes_every_removal) {
  temp_dir dir("removal-queue");
  {
    removal_queue q(dir.path());
    for (int i = 0; i < 20; ++i) {
      make_tree(dir.path() + "/sb" + std::to_string(i));
      q.take(dir.path() + "/sb" + std::to_string(i));
    }
  }
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}

BOOST_AUTO_TEST_CASE(a_path_that_cannot_be_moved_is_an_error_and_stays) {
  temp_dir dir("removal-queue");
  removal_queue q(dir.path());
  BOOST_CHECK_THROW(q.take(dir.path() + "/missing"), std::system_error);
  q.drain();
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}

namespace {

// A removed sandbox's directory as the oci driver leaves it: layer, work dir, mount
// point, record, bundle, a memory image.
void make_sandbox_dir(const fs::path& root) {
  make_tree(root);
  fs::create_directories(root / "merged");
  fs::create_directories(root / "lower");
  fs::create_directories(root / "checkpoint");
  std::ofstream(root / "checkpoint/pages.img") << "memory";
  std::ofstream(root / "config.json") << "{\"root\": {}}";
  std::ofstream(root / ".sandbox.json.next") << "{\"id\": \"old\"}";
  std::ofstream(root / "work/work/incompat") << "x";
}

std::uintmax_t bytes_under(const fs::path& root) {
  std::uintmax_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file())
      n += e.file_size();
  return n;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_recyclable_sandbox_directory_becomes_an_empty_skeleton_for_reuse) {
  temp_dir dir("removal-queue");
  removal_queue q(dir.path());
  make_sandbox_dir(dir.path() + "/old");
  q.take(dir.path() + "/old", true);
  q.drain();
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
  BOOST_TEST_REQUIRE(q.spares() == 1u);
  BOOST_TEST_REQUIRE(q.reuse(dir.path() + "/new"));
  BOOST_TEST(q.spares() == 0u);
  BOOST_TEST(fs::is_empty(dir.path() + "/spare"));
  // The skeleton: empty lower/ and merged/, empty record and bundle files; nothing of the
  // old sandbox (a layer of an older layout, upper/ and work/, is deleted too).
  fs::path n = dir.path() + "/new";
  BOOST_TEST(!fs::exists(n / "upper"));
  BOOST_TEST(!fs::exists(n / "checkpoint"));
  BOOST_TEST(!fs::exists(n / "work"));
  BOOST_TEST(fs::is_empty(n / "lower"));
  BOOST_TEST(fs::is_empty(n / "merged"));
  BOOST_TEST(bytes_under(n) == 0u);
  std::set<std::string> names;
  for (auto& e : fs::directory_iterator(n))
    names.insert(e.path().filename().string());
  BOOST_TEST((names == std::set<std::string>{".sandbox.json.next", "config.json", "lower", "merged",
                                             "sandbox.json"}));
  BOOST_TEST(!q.reuse(dir.path() + "/other")); // one spare, used once
}

BOOST_AUTO_TEST_CASE(a_directory_that_is_not_a_clean_skeleton_is_deleted_not_kept) {
  temp_dir dir("removal-queue");
  removal_queue q(dir.path());
  make_sandbox_dir(dir.path() + "/a");
  std::ofstream(dir.path() + "/a/merged/left-behind") << "x"; // merged/ not empty
  q.take(dir.path() + "/a", true);
  make_sandbox_dir(dir.path() + "/b");
  fs::remove_all(dir.path() + "/b/lower");
  std::ofstream(dir.path() + "/b/lower") << "a file where a directory belongs";
  q.take(dir.path() + "/b", true);
  make_sandbox_dir(dir.path() + "/c");
  q.take(dir.path() + "/c"); // not recyclable
  q.drain();
  BOOST_TEST(q.spares() == 0u);
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
  BOOST_TEST(fs::is_empty(dir.path() + "/spare"));
}

BOOST_AUTO_TEST_CASE(spares_are_capped) {
  temp_dir dir("removal-queue");
  removal_queue q(dir.path(), 2);
  for (int i = 0; i < 5; ++i) {
    make_sandbox_dir(dir.path() + "/s" + std::to_string(i));
    q.take(dir.path() + "/s" + std::to_string(i), true);
  }
  q.drain();
  BOOST_TEST(q.spares() == 2u);
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}
