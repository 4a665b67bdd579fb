// The hollow driver's sandbox table and its journal (runtime/hollow_table.hpp): what a
// reopened table sees, torn and damaged tails, compaction; and what the hollow driver
// keeps on disk for a sandbox (no layer until a file is written).
#define BOOST_TEST_MODULE hollow_table
#include <boost/test/unit_test.hpp>

#include "runtime/hollow_driver.hpp"
#include "runtime/hollow_table.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

using namespace sandboxd::runtime;
using sandboxd::test::temp_dir;

namespace {

sandbox_info info_of(const std::string& id, sandbox_status s = sandbox_status::created) {
  sandbox_info i;
  i.id = id;
  i.template_name = "base";
  i.status = s;
  i.limits.memory_bytes = 256ull << 20;
  i.limits.pids = 77;
  return i;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

struct journal_fixture {
  temp_dir dir{"hollow-table"};
  std::string path = dir / "hollow.journal";
};

} // namespace

BOOST_AUTO_TEST_SUITE(hollow_table_journal)

BOOST_FIXTURE_TEST_CASE(a_reopened_table_sees_every_sandbox_with_its_status, journal_fixture) {
  {
    hollow_table t(path, false);
    t.insert(info_of("a"));
    t.insert(info_of("b"));
    t.insert(info_of("c"));
    t.set_status("a", sandbox_status::running);
    t.set_status("a", sandbox_status::paused_memory);
    t.erase("b");
  }
  hollow_table t(path, false);
  BOOST_TEST(t.size() == 2u);
  BOOST_TEST_REQUIRE(t.find("a"));
  BOOST_TEST((t.find("a")->status == sandbox_status::paused_memory));
  BOOST_TEST(t.find("a")->template_name == "base");
  BOOST_TEST(t.find("a")->limits.memory_bytes == 256ull << 20);
  BOOST_TEST(t.find("a")->limits.pids == 77u);
  BOOST_TEST(!t.find("b"));
  BOOST_TEST((t.find("c")->status == sandbox_status::created));
}

BOOST_FIXTURE_TEST_CASE(a_torn_last_record_is_dropped_and_cut_off, journal_fixture) {
  {
    hollow_table t(path, true);
    t.insert(info_of("a"));
    t.set_status("a", sandbox_status::running);
  }
  auto bytes = read_all(path);
  write_all(path, bytes.substr(0, bytes.size() - 3)); // the status record, torn
  {
    hollow_table t(path, false);
    BOOST_TEST_REQUIRE(t.find("a"));
    BOOST_TEST((t.find("a")->status == sandbox_status::created));
    BOOST_TEST(t.records() == 1u);
    t.set_status("a", sandbox_status::running);
  }
  // The torn bytes were cut off, so the change made after them is read back.
  hollow_table t(path, false);
  BOOST_TEST((t.find("a")->status == sandbox_status::running));
}

BOOST_FIXTURE_TEST_CASE(a_damaged_record_and_what_follows_are_dropped, journal_fixture) {
  {
    hollow_table t(path, false);
    t.insert(info_of("a"));
    t.insert(info_of("b"));
  }
  auto bytes = read_all(path);
  bytes[bytes.size() - 1] ^= 0x5a; // inside b's record
  write_all(path, bytes + std::string(100, '\0'));
  hollow_table t(path, false);
  BOOST_TEST(t.size() == 1u);
  BOOST_TEST(t.find("a"));
}

BOOST_FIXTURE_TEST_CASE(a_journal_mostly_dead_records_is_rewritten_with_the_live_ones,
                        journal_fixture) {
  {
    hollow_table t(path, false);
    t.insert(info_of("keep"));
    // 70,001 records: the table rewrites its journal once past 65,536.
    for (int i = 0; i < 35000; ++i) {
      const std::string id = "gone-" + std::to_string(i);
      t.insert(info_of(id));
      t.erase(id);
    }
    t.set_status("keep", sandbox_status::paused_filesystem);
    BOOST_TEST(t.records() < 10000u);
    BOOST_TEST(t.size() == 1u);
  }
  BOOST_TEST(std::filesystem::file_size(path) < 1000000u); // 3 MB without the rewrite
  BOOST_TEST(!std::filesystem::exists(path + ".tmp"));
  hollow_table t(path, false);
  BOOST_TEST(t.size() == 1u);
  BOOST_TEST((t.find("keep")->status == sandbox_status::paused_filesystem));
}

BOOST_FIXTURE_TEST_CASE(a_file_that_is_no_journal_is_refused, journal_fixture) {
  write_all(path, "{\"id\": \"not a journal\"}\n");
  BOOST_CHECK_THROW(hollow_table(path, false), std::runtime_error);
  BOOST_TEST(read_all(path) == "{\"id\": \"not a journal\"}\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(hollow_driver_layer)

BOOST_AUTO_TEST_CASE(a_sandbox_has_no_layer_on_disk_until_a_file_is_written) {
  temp_dir dir("hollow-layer");
  hollow_driver d(hollow_options{dir / "data", {}});
  create_request req;
  req.id = "lazy";
  BOOST_TEST_REQUIRE(d.create(req).ok());
  BOOST_TEST_REQUIRE(d.start("lazy").ok());
  BOOST_TEST(!std::filesystem::exists(dir / "data/sandboxes/lazy"));
  BOOST_TEST(d.usage("lazy")->writable_bytes == 0u);
  BOOST_TEST(d.list_dir("lazy", "/")->entries.empty());
  BOOST_TEST((d.stat("lazy", "/")->type == file_type::directory));
  BOOST_TEST((d.read_file("lazy", "/a").code() == errc::not_found));
  BOOST_TEST_REQUIRE(d.write_file("lazy", "/a", "abc", 0644).ok());
  BOOST_TEST(std::filesystem::exists(dir / "data/sandboxes/lazy/upper/a"));
  BOOST_TEST(d.usage("lazy")->writable_bytes == 3u);
  // Nothing was written to the layer every empty sandbox reads.
  BOOST_TEST(std::filesystem::is_empty(dir / "data/empty-root"));
  BOOST_TEST_REQUIRE(d.remove("lazy").ok());
  BOOST_TEST(!std::filesystem::exists(dir / "data/sandboxes/lazy"));
}

BOOST_AUTO_TEST_CASE(leftover_files_of_an_unknown_sandbox_block_its_id_until_removed) {
  temp_dir dir("hollow-layer");
  hollow_driver d(hollow_options{dir / "data", {}});
  std::filesystem::create_directories(dir / "data/sandboxes/old/upper");
  create_request req;
  req.id = "old";
  BOOST_TEST((d.create(req).code() == errc::conflict));
  BOOST_TEST((d.inspect("old").code() == errc::not_found));
  BOOST_TEST_REQUIRE(d.remove("old").ok());
  BOOST_TEST(!std::filesystem::exists(dir / "data/sandboxes/old"));
  BOOST_TEST(d.create(req).ok());
}

BOOST_AUTO_TEST_SUITE_END()
