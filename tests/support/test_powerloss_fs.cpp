// powerloss_fs keeps its model: what was fsynced survives every crash; what was not can be
// lost — unsynced writes, files whose directory entry was never synced, renames and
// removals the directory never synced — and a failed fsync makes nothing durable.
#define BOOST_TEST_MODULE powerloss_fs
#include <boost/test/unit_test.hpp>

#include "tests/support/powerloss_fs.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using sandboxd::test::powerloss_fs;

namespace {

boost::test_tools::assertion_result fuse_usable(boost::unit_test::test_unit_id) {
  const std::string why = powerloss_fs::unavailable_reason();
  boost::test_tools::assertion_result r(why.empty());
  r.message() << why;
  return r;
}

struct mounted {
  sandboxd::test::temp_dir tmp{"powerloss"};
  std::string mnt = tmp.path() + "/mnt";
  std::unique_ptr<powerloss_fs> fs;

  explicit mounted(std::uint64_t seed) {
    fs::create_directory(mnt);
    fs = std::make_unique<powerloss_fs>(mnt, seed);
  }
  ~mounted() { fs.reset(); }
  std::string operator/(const std::string& name) const { return mnt + "/" + name; }
};

void sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::fsync(fd) == 0);
  ::close(fd);
}

// Writes `content` at `offset` (creating the file), fsynced when `sync`; returns fsync's
// result (0, or -1 with errno).
int write_file(const std::string& path, const std::string& content, off_t offset, bool sync) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::pwrite(fd, content.data(), content.size(), offset) ==
                static_cast<ssize_t>(content.size()));
  int rc = sync ? ::fdatasync(fd) : 0;
  ::close(fd);
  return rc;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

BOOST_AUTO_TEST_CASE(what_was_fsynced_survives_every_crash,
                     *boost::unit_test::precondition(fuse_usable)) {
  mounted m(sandboxd::test::test_seed("powerloss_fs synced"));
  const std::string synced(3 * 4096 + 100, 's');
  write_file(m / "a", synced, 0, true);
  sync_dir(m.mnt);
  for (int i = 0; i < 20; ++i) {
    // Unsynced writes after it, some past its end: lost or kept, never damaging it.
    write_file(m / "a", std::string(5000, 'u'), static_cast<off_t>(synced.size()), false);
    m.fs->crash();
    const std::string after = read_file(m / "a");
    BOOST_REQUIRE(after.size() >= synced.size());
    BOOST_TEST(after.compare(0, synced.size(), synced) == 0);
    ::truncate((m / "a").c_str(), static_cast<off_t>(synced.size()));
    write_file(m / "a", "", 0, true);
  }
}

BOOST_AUTO_TEST_CASE(unsynced_pages_are_lost_or_kept_page_by_page_and_both_happen,
                     *boost::unit_test::precondition(fuse_usable)) {
  mounted m(sandboxd::test::test_seed("powerloss_fs pages"));
  write_file(m / "f", std::string(64 * 4096, '\0'), 0, true);
  sync_dir(m.mnt);
  std::uint64_t kept = 0, dropped = 0;
  for (int i = 0; i < 20; ++i) {
    write_file(m / "f", std::string(64 * 4096, 'x'), 0, false);
    m.fs->crash();
    kept += m.fs->pages_kept_at_last_crash();
    dropped += m.fs->pages_dropped_at_last_crash();
    const std::string after = read_file(m / "f");
    BOOST_REQUIRE(after.size() == 64u * 4096);
    // Each page is whole: all x (reached the disk) or all zeros (did not).
    for (std::size_t p = 0; p < 64; ++p) {
      const auto page = after.substr(p * 4096, 4096);
      BOOST_TEST((page == std::string(4096, 'x') || page == std::string(4096, '\0')));
    }
    write_file(m / "f", std::string(64 * 4096, '\0'), 0, true);
  }
  BOOST_TEST(kept > 0u);
  BOOST_TEST(dropped > 0u);
}

BOOST_AUTO_TEST_CASE(entries_not_synced_in_their_directory_are_lost,
                     *boost::unit_test::precondition(fuse_usable)) {
  mounted m(sandboxd::test::test_seed("powerloss_fs entries"));
  write_file(m / "kept", "kept", 0, true);
  write_file(m / "old", "old", 0, true);
  sync_dir(m.mnt);
  // A new file, fsynced, but its directory not: gone. A rename and a removal, not synced:
  // undone.
  write_file(m / "new", "new", 0, true);
  fs::rename(m / "old", m / "renamed");
  fs::remove(m / "kept");
  m.fs->crash();
  BOOST_TEST(!fs::exists(m / "new"));
  BOOST_TEST(!fs::exists(m / "renamed"));
  BOOST_TEST(read_file(m / "old") == "old");
  BOOST_TEST(read_file(m / "kept") == "kept");
  // Synced, they stay.
  write_file(m / "new", "new", 0, true);
  fs::create_directory(m / "d");
  sync_dir(m.mnt);
  write_file(m / "d/inner", "inner", 0, true);
  sync_dir(m / "d");
  m.fs->crash();
  BOOST_TEST(read_file(m / "new") == "new");
  BOOST_TEST(read_file(m / "d/inner") == "inner");
}

BOOST_AUTO_TEST_CASE(a_failed_fsync_makes_nothing_durable_but_the_data_stays_visible,
                     *boost::unit_test::precondition(fuse_usable)) {
  mounted m(sandboxd::test::test_seed("powerloss_fs eio"));
  write_file(m / "f", "", 0, true);
  sync_dir(m.mnt);
  m.fs->fail_next_fsyncs(1);
  const std::string data(8 * 4096, 'y');
  int fd = ::open((m / "f").c_str(), O_RDWR);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::pwrite(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
  errno = 0;
  BOOST_TEST(::fdatasync(fd) == -1);
  BOOST_TEST(errno == EIO);
  // Visible, as a page cache keeps it; also through a read-only shared mapping.
  BOOST_TEST(read_file(m / "f") == data);
  void* map = ::mmap(nullptr, data.size(), PROT_READ, MAP_SHARED, fd, 0);
  BOOST_REQUIRE(map != MAP_FAILED);
  BOOST_TEST(std::string(static_cast<const char*>(map), data.size()) == data);
  ::munmap(map, data.size());
  ::close(fd);
  // The next fsync works again.
  write_file(m / "g", "g", 0, true);
}
