// The background deletion of removed sandboxes' directories (runtime/removal_queue.hpp):
// a taken path is gone at once, its tree is deleted by drain(), leftovers of an earlier
// process are swept, the destructor finishes pending work, and a path that cannot be
// moved is reported and left as it was.
#define BOOST_TEST_MODULE removal_queue
#include <boost/test/unit_test.hpp>

#include "runtime/removal_queue.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
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
  removal_queue q(dir.path() + "/removing");
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
  removal_queue q(dir.path() + "/removing");
  q.drain();
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}

BOOST_AUTO_TEST_CASE(the_destructor_finishes_every_removal) {
  temp_dir dir("removal-queue");
  {
    removal_queue q(dir.path() + "/removing");
    for (int i = 0; i < 20; ++i) {
      make_tree(dir.path() + "/sb" + std::to_string(i));
      q.take(dir.path() + "/sb" + std::to_string(i));
    }
  }
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}

BOOST_AUTO_TEST_CASE(a_path_that_cannot_be_moved_is_an_error_and_stays) {
  temp_dir dir("removal-queue");
  removal_queue q(dir.path() + "/removing");
  BOOST_CHECK_THROW(q.take(dir.path() + "/missing"), std::system_error);
  q.drain();
  BOOST_TEST(fs::is_empty(dir.path() + "/removing"));
}
