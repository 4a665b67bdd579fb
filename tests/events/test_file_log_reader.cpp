// file_log_reader: a file log opened read-only serves exactly the records file_log serves,
// changes nothing in the directory (not even a torn tail that file_log would cut), reads a
// log another file_log holds, refuses appends and refuses damage.
#define BOOST_TEST_MODULE file_log_reader
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "events/file_log_format.hpp"
#include "events/file_log_reader.hpp"
#include "tests/support/dir_fingerprint.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>

using namespace sandboxd::events;
using sandboxd::test::dir_fingerprint;
using sandboxd::test::temp_dir;
namespace fs = std::filesystem;

namespace {

constexpr std::int32_t k_partitions = 4;

file_log_options options(const std::string& dir) {
  file_log_options o;
  o.dir = dir;
  o.partitions = k_partitions;
  o.segment_bytes = 8192; // several segments
  return o;
}

// Writes `n` records of 8 keys, in batches of 3, and closes the log.
void write_records(const std::string& dir, int n) {
  file_log log(options(dir));
  for (int i = 0; i < n; i += 3) {
    std::vector<log_record> batch;
    for (int j = i; j < std::min(n, i + 3); ++j)
      batch.push_back({"sb-" + std::to_string(j % 8), "value " + std::to_string(j)});
    BOOST_REQUIRE(log.append_and_wait(batch).ok());
  }
}

std::vector<stored_record> all_of(event_log& log, std::int32_t partition) {
  auto r = log.read(partition, 0, 1'000'000);
  BOOST_REQUIRE(r.ok());
  return r.records;
}

void require_same_records(event_log& a, event_log& b) {
  BOOST_REQUIRE_EQUAL(a.partitions(), b.partitions());
  for (std::int32_t p = 0; p < a.partitions(); ++p) {
    const auto x = all_of(a, p), y = all_of(b, p);
    BOOST_REQUIRE_EQUAL(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      BOOST_TEST(x[i].offset == y[i].offset);
      BOOST_TEST(x[i].key == y[i].key);
      BOOST_TEST(x[i].value == y[i].value);
    }
    BOOST_TEST(a.end_offset(p).offset == b.end_offset(p).offset);
  }
}

std::string last_segment(const std::string& dir) {
  std::string last;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".log" && e.path().string() > last)
      last = e.path().string();
  return last;
}

} // namespace

BOOST_AUTO_TEST_CASE(reader_serves_what_file_log_serves_and_changes_nothing) {
  temp_dir dir("reader");
  write_records(dir / "log", 600);
  BOOST_REQUIRE_GT(std::distance(fs::directory_iterator(dir / "log"), fs::directory_iterator{}),
                   4); // META, LOCK and several segments

  const auto before = dir_fingerprint(dir.path());
  {
    file_log_reader reader(dir / "log");
    BOOST_TEST(reader.torn_bytes() == 0u);
    std::int64_t total = 0;
    for (std::int32_t p = 0; p < k_partitions; ++p)
      total += reader.end_offset(p).offset;
    BOOST_TEST(total == 600);
    // Records of one key are in the partition of the key, in append order.
    const auto p = reader.partition_for("sb-5");
    std::vector<std::string> values;
    for (const auto& r : all_of(reader, p))
      if (r.key == "sb-5")
        values.push_back(r.value);
    BOOST_REQUIRE_EQUAL(values.size(), 75u);
    BOOST_TEST(values.front() == "value 5");
    BOOST_TEST(values.back() == "value 597");
    // Reads from the middle, with a limit.
    auto some = reader.read(p, 3, 2);
    BOOST_REQUIRE(some.ok());
    BOOST_REQUIRE_EQUAL(some.records.size(), 2u);
    BOOST_TEST(some.records[0].offset == 3);
  }
  BOOST_TEST(dir_fingerprint(dir.path()) == before);

  file_log_reader reader(dir / "log");
  file_log log(options(dir / "log"));
  require_same_records(reader, log);
}

BOOST_AUTO_TEST_CASE(a_torn_last_batch_is_left_out_and_left_in_place) {
  temp_dir dir("reader-torn");
  write_records(dir / "log", 30);
  // Half of a batch at the end of the last segment, as a crash in the middle of a write
  // leaves it.
  std::string body;
  file_log_format::append_record(body, 0, 999, "sb-x", std::string(200, 'x'));
  char header[file_log_format::k_batch_header_size];
  file_log_format::make_batch_header(header, body, 1);
  {
    std::ofstream out(last_segment(dir / "log"), std::ios::binary | std::ios::app);
    out.write(header, sizeof header);
    out.write(body.data(), static_cast<std::streamsize>(body.size() / 2));
  }
  const auto before = dir_fingerprint(dir.path());
  std::vector<std::vector<stored_record>> seen;
  {
    file_log_reader reader(dir / "log");
    BOOST_TEST(reader.torn_bytes() == sizeof header + body.size() / 2);
    std::int64_t total = 0;
    for (std::int32_t p = 0; p < k_partitions; ++p) {
      total += reader.end_offset(p).offset;
      seen.push_back(all_of(reader, p));
    }
    BOOST_TEST(total == 30);
  }
  BOOST_TEST(dir_fingerprint(dir.path()) == before);
  // file_log, which owns the directory, cuts the same tail and serves the same records.
  file_log log(options(dir / "log"));
  BOOST_TEST(log.recovery().truncated_bytes == sizeof header + body.size() / 2);
  for (std::int32_t p = 0; p < k_partitions; ++p)
    BOOST_TEST(all_of(log, p).size() == seen[p].size());
}

BOOST_AUTO_TEST_CASE(reads_a_log_that_a_file_log_holds_open) {
  temp_dir dir("reader-live");
  file_log log(options(dir / "log"));
  BOOST_REQUIRE(log.append_and_wait({{"sb-1", "a"}, {"sb-1", "b"}}).ok());
  file_log_reader reader(dir / "log"); // no LOCK taken: no "in use by another process"
  const auto p = reader.partition_for("sb-1");
  const auto records = all_of(reader, p);
  BOOST_REQUIRE_EQUAL(records.size(), 2u);
  BOOST_TEST(records[1].value == "b");
  // As of opening: a later append is not seen, and the reader never waits.
  BOOST_REQUIRE(log.append_and_wait({{"sb-1", "c"}}).ok());
  BOOST_TEST(reader.end_offset(p).offset == 2);
  BOOST_TEST(!reader.wait_for(p, 2, std::chrono::milliseconds(1)));
}

BOOST_AUTO_TEST_CASE(appends_are_refused) {
  temp_dir dir("reader-append");
  write_records(dir / "log", 3);
  file_log_reader reader(dir / "log");
  auto r = reader.append({{"sb-1", "x"}}).get();
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failure->code == sandboxd::errc::permission_denied);
  BOOST_TEST(!r.maybe_stored);
  BOOST_TEST(r.failure->message.find("read-only") != std::string::npos);
  auto bad = reader.read(k_partitions, 0, 1);
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.failure->code == sandboxd::errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(damage_in_a_sealed_segment_is_a_fault_naming_the_file) {
  temp_dir dir("reader-damage");
  write_records(dir / "log", 600);
  const std::string first = (dir / "log") + "/" + file_log_format::segment_file_name(0);
  {
    std::fstream f(first, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(100);
    f.put('\x7f');
  }
  try {
    file_log_reader reader(dir / "log");
    BOOST_FAIL("a damaged segment was read");
  } catch (const log_fault& e) {
    BOOST_TEST(std::string(e.what()).find(first) != std::string::npos, e.what());
  }
  BOOST_CHECK_THROW(file_log_reader(dir / "missing"), log_fault);
}
