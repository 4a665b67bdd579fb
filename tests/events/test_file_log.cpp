// file_log beyond the conformance suite: recovery of a torn tail, damage reported with its
// segment and position, the directory lock, segment rolling and indexes, group commit,
// append_and_wait, and a failed write never reported durable.
#define BOOST_TEST_MODULE file_log
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "events/file_log_format.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sys/mount.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace sandboxd::events;
namespace fs = std::filesystem;
namespace lf = sandboxd::events::file_log_format;

namespace {

struct log_dir {
  sandboxd::test::temp_dir tmp{"file-log"};
  std::string dir = tmp.path() + "/log";

  file_log_options options(std::uint64_t segment_bytes = std::uint64_t{64} << 20) const {
    file_log_options o;
    o.dir = dir;
    o.partitions = 4;
    o.segment_bytes = segment_bytes;
    return o;
  }
  std::string segment(std::uint64_t n) const { return dir + "/" + lf::segment_file_name(n); }
  std::string index(std::uint64_t n) const { return dir + "/" + lf::index_file_name(n); }
};

std::string value_of(int i) {
  return "value-" + std::to_string(i) + std::string(100, 'v');
}
std::string key_of(int i) {
  return "sb_" + std::to_string(i % 17);
}

// Appends records [first, first + n) one append (so one batch) each; returns positions.
std::vector<record_position> append_each(file_log& log, int first, int n) {
  std::vector<record_position> out;
  for (int i = first; i < first + n; ++i) {
    auto r = log.append({{key_of(i), value_of(i)}}).get();
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    out.push_back(r.positions[0]);
  }
  return out;
}

// Every record of the log, by (partition, offset).
std::map<std::pair<int, std::int64_t>, std::string> contents(file_log& log) {
  std::map<std::pair<int, std::int64_t>, std::string> out;
  for (int p = 0; p < log.partitions(); ++p) {
    std::int64_t at = 0;
    for (;;) {
      auto r = log.read(p, at, 1000);
      BOOST_REQUIRE(r.ok());
      if (r.records.empty())
        break;
      for (auto& rec : r.records)
        out[{p, rec.offset}] = rec.value;
      at += static_cast<std::int64_t>(r.records.size());
    }
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct batch_at {
  std::uint64_t position;
  std::uint32_t length;
  std::uint32_t records;
};

std::vector<batch_at> batches_of(const std::string& segment_bytes) {
  std::vector<batch_at> out;
  std::uint64_t at = lf::k_segment_header_size;
  while (at < segment_bytes.size()) {
    std::uint32_t length, count;
    BOOST_REQUIRE(lf::check_batch(segment_bytes.data() + at, segment_bytes.size() - at, length,
                                  count) == lf::batch_check::ok);
    out.push_back({at, length, count});
    at += lf::k_batch_header_size + length;
  }
  return out;
}

std::string fault_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const log_fault& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_CASE(a_torn_last_batch_is_cut_and_every_acknowledged_record_stays) {
  log_dir d;
  std::map<std::pair<int, std::int64_t>, std::string> acknowledged;
  std::uint64_t size_before_last = 0;
  {
    file_log log(d.options());
    append_each(log, 0, 50);
    acknowledged = contents(log);
  }
  size_before_last = fs::file_size(d.segment(0)); // closed: no zeroed room after the batches
  {
    file_log log(d.options());
    append_each(log, 50, 1);
  }
  // The last batch only half reached the disk.
  const auto full = fs::file_size(d.segment(0));
  const auto half = (full - size_before_last) / 2;
  fs::resize_file(d.segment(0), size_before_last + half);
  file_log log(d.options());
  BOOST_TEST(log.recovery().truncated_bytes == half);
  BOOST_TEST(log.recovery().truncated_segment == d.segment(0));
  BOOST_TEST(fs::file_size(d.segment(0)) == size_before_last);
  BOOST_TEST((contents(log) == acknowledged));
  // The log goes on where the torn batch would have been.
  auto next = append_each(log, 50, 1);
  BOOST_TEST(next[0].offset == log.end_offset(next[0].partition).offset - 1);
}

// Zeros are what the writer keeps ahead of its batches (and what ext4 can leave after a
// power cut: the size grew, the data never arrived). They are cut, and reported as no torn
// data: no write was interrupted there.
BOOST_AUTO_TEST_CASE(zeros_after_the_last_batch_are_cut_and_are_no_torn_tail) {
  log_dir d;
  std::map<std::pair<int, std::int64_t>, std::string> acknowledged;
  {
    file_log log(d.options());
    append_each(log, 0, 30);
    acknowledged = contents(log);
  }
  const auto size = fs::file_size(d.segment(0));
  fs::resize_file(d.segment(0), size + 8192);
  file_log log(d.options());
  BOOST_TEST(log.recovery().truncated_bytes == 0u);
  BOOST_TEST(fs::file_size(d.segment(0)) == size);
  BOOST_TEST((contents(log) == acknowledged));
}

// While the log is open its active segment ends in zeros the writer wrote ahead of the
// batches (so their syncs need no metadata); a crash leaves them, and a roll cuts them off
// the segment it seals and syncs that cut before the next segment exists. So a sealed
// segment that ends in zeros was damaged after it was synced: opening refuses it, whether
// or not its (unsynced) index is still there.
BOOST_AUTO_TEST_CASE(
  zeroed_room_is_kept_while_open_and_a_sealed_segment_ending_in_zeros_is_refused) {
  log_dir d;
  std::map<std::pair<int, std::int64_t>, std::string> written;
  {
    file_log log(d.options(64 << 10));
    append_each(log, 0, 600);
    written = contents(log);
    std::uint64_t last = 0;
    while (fs::exists(d.segment(last + 1)))
      ++last;
    BOOST_TEST(last > 0u);
    BOOST_TEST(fs::file_size(d.segment(last)) == (64u << 10), "the active segment is zeroed ahead");
    for (std::uint64_t n = 0; n < last; ++n)
      BOOST_TEST(batches_of(read_file(d.segment(n))).size() > 0u); // sealed: batches, no zeros
  }
  const auto sealed_size = fs::file_size(d.segment(0));
  BOOST_TEST(sealed_size < (64u << 10));
  fs::resize_file(d.segment(0), 64 << 10);
  for (bool with_index : {true, false}) {
    if (!with_index)
      fs::remove(d.index(0)); // so that it is scanned without the index's help
    auto message = fault_of([&] { file_log log(d.options(64 << 10)); });
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.find("corrupt segment " + d.segment(0) + " at byte " +
                            std::to_string(sealed_size)) != std::string::npos,
               message);
    BOOST_TEST(message.find("the segment is sealed") != std::string::npos, message);
    BOOST_TEST(fs::file_size(d.segment(0)) == (64u << 10), "a refused segment is left as it is");
  }
}

// An acknowledged batch at the end of a sealed segment zeroed (as
// a power loss can leave blocks the disk never wrote) and the never-synced index gone. The
// log must refuse to open, naming the file and the position — never open with that
// partition's end offset moved back and hand its offsets out again.
BOOST_AUTO_TEST_CASE(a_sealed_segment_whose_last_acknowledged_batch_is_zeroed_is_refused) {
  log_dir d;
  {
    file_log log(d.options(16 << 10));
    append_each(log, 0, 300);
  }
  BOOST_REQUIRE(fs::exists(d.segment(1)));
  std::string bytes = read_file(d.segment(0));
  const auto last = batches_of(bytes).back();
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(last.position), bytes.end(), '\0');
  write_file(d.segment(0), bytes);
  fs::remove(d.index(0));
  auto message = fault_of([&] { file_log log(d.options(16 << 10)); });
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(message.find("corrupt segment " + d.segment(0) + " at byte " +
                          std::to_string(last.position)) != std::string::npos,
             message);
  BOOST_TEST(!fs::exists(d.index(0)), "no index is written over the loss");
}

// Torn-tail detection walks the batches by the lengths the format declares and never looks
// into record values: a value that holds a whole valid batch (tenant bytes can: exec argv,
// labels) is not taken for a later write when its own batch is torn. The torn batch is cut
// and the log opens.
BOOST_AUTO_TEST_CASE(a_torn_batch_whose_value_embeds_a_valid_batch_is_cut_not_called_damage) {
  log_dir d;
  std::map<std::pair<int, std::int64_t>, std::string> acknowledged;
  {
    file_log log(d.options());
    append_each(log, 0, 20);
    acknowledged = contents(log);
  }
  const auto size_before = fs::file_size(d.segment(0));
  // A value that holds a valid batch of two records, padded so that the embedded batch
  // lies whole in the first half of the outer batch.
  std::string inner_body;
  lf::append_record(inner_body, 1, 0, "sb_x", std::string(300, 'i'));
  lf::append_record(inner_body, 2, 0, "sb_y", std::string(300, 'j'));
  char inner_header[lf::k_batch_header_size];
  lf::make_batch_header(inner_header, inner_body, 2);
  const std::string embedded = std::string(inner_header, sizeof inner_header) + inner_body;
  {
    file_log log(d.options());
    auto r = log.append({{"sb_tenant", "argv:" + embedded + std::string(4000, 'p')}}).get();
    BOOST_REQUIRE(r.ok());
  }
  // Power loss: the last batch reached the disk only up to its middle.
  const auto full = fs::file_size(d.segment(0));
  const auto torn_at = size_before + (full - size_before) / 2;
  BOOST_REQUIRE(torn_at > size_before + lf::k_batch_header_size + lf::k_record_header_size + 9 + 5 +
                            embedded.size());
  fs::resize_file(d.segment(0), torn_at);
  file_log log(d.options());
  BOOST_TEST(log.recovery().truncated_bytes == torn_at - size_before);
  BOOST_TEST(fs::file_size(d.segment(0)) == size_before);
  BOOST_TEST((contents(log) == acknowledged));
}

// A damaged batch in the middle of the active segment is refused whichever part is
// damaged: its body (its header declares its end, and batches follow it), or its header's
// magic (its records, walked by their own lengths, end where a valid batch follows).
BOOST_AUTO_TEST_CASE(a_damaged_batch_header_in_the_active_segment_is_refused_not_cut) {
  log_dir d;
  {
    file_log log(d.options());
    append_each(log, 0, 50);
  }
  std::string bytes = read_file(d.segment(0));
  const auto damaged = batches_of(bytes)[25];
  bytes[damaged.position] ^= 0x20; // the magic
  write_file(d.segment(0), bytes);
  auto message = fault_of([&] { file_log log(d.options()); });
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(message.find("at byte " + std::to_string(damaged.position)) != std::string::npos,
             message);
  BOOST_TEST(fs::file_size(d.segment(0)) == bytes.size(), "nothing was cut");
}

// An append whose records would make a batch larger than a segment can hold (2 GiB) is
// refused before anything is written, naming the limit; the log goes on.
BOOST_AUTO_TEST_CASE(an_append_larger_than_the_largest_batch_is_refused_naming_the_limit) {
  log_dir d;
  file_log log(d.options());
  std::vector<log_record> huge;
  const std::string value(std::size_t{64} << 20, 'v'); // the largest value
  const std::size_t n = lf::k_max_batch_body_bytes / value.size() + 1;
  for (std::size_t i = 0; i < n; ++i)
    huge.push_back({"sb_huge", value});
  auto r = log.append_and_wait(huge);
  huge.clear();
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST((r.failure->code == errc::invalid_argument));
  BOOST_TEST(!r.maybe_stored);
  BOOST_TEST(r.failure->message.find(std::to_string(lf::k_max_batch_body_bytes)) !=
               std::string::npos,
             r.failure->message);
  BOOST_TEST(log.end_offset(log.partition_for("sb_huge")).offset == 0);
  BOOST_TEST(log.append({{"sb_after", "small"}}).get().ok());
  BOOST_TEST(contents(log).size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_flipped_byte_in_the_middle_of_the_last_segment_fails_open_naming_it) {
  log_dir d;
  {
    file_log log(d.options());
    append_each(log, 0, 200);
  }
  std::string bytes = read_file(d.segment(0));
  auto batches = batches_of(bytes);
  BOOST_REQUIRE(batches.size() == 200u);
  const auto damaged = batches[100];
  // A byte of the record's value: the record header stays readable.
  const auto record = damaged.position + lf::k_batch_header_size;
  bytes[record + lf::k_record_header_size + 20] ^= 0x01;
  write_file(d.segment(0), bytes);
  auto message = fault_of([&] { file_log log(d.options()); });
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(message.find(d.segment(0)) != std::string::npos);
  BOOST_TEST(message.find("at byte " + std::to_string(damaged.position)) != std::string::npos);
  BOOST_TEST(message.find("record is at byte " + std::to_string(record)) != std::string::npos);
  // The healthy batches after it are not cut off as a torn tail.
  BOOST_TEST(fs::file_size(d.segment(0)) == bytes.size());
}

BOOST_AUTO_TEST_CASE(a_flipped_byte_in_a_sealed_segment_fails_the_read_naming_segment_and_offset) {
  log_dir d;
  std::vector<record_position> positions;
  {
    file_log log(d.options(16 << 10));
    positions = append_each(log, 0, 600);
  }
  BOOST_REQUIRE(fs::exists(d.segment(3)));
  BOOST_REQUIRE(fs::exists(d.index(0)));
  std::string bytes = read_file(d.segment(0));
  auto batches = batches_of(bytes);
  const auto damaged = batches[batches.size() / 2];
  const auto record = damaged.position + lf::k_batch_header_size;
  lf::record_view view;
  BOOST_REQUIRE(lf::read_record(bytes.data() + record, bytes.size() - record, view));
  bytes[record + lf::k_record_header_size + view.key.size() + 3] ^= 0x40;
  write_file(d.segment(0), bytes);
  {
    // The sealed segment's index spares the open a scan; the read checks the record.
    file_log log(d.options(16 << 10));
    const auto p = static_cast<std::int32_t>(view.partition);
    const auto o = static_cast<std::int64_t>(view.offset);
    auto before = log.read(p, 0, static_cast<std::size_t>(o));
    BOOST_TEST(before.ok());
    BOOST_TEST(before.records.size() == static_cast<std::size_t>(o));
    auto message = fault_of([&] { log.read(p, 0, static_cast<std::size_t>(o) + 1); });
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.find(d.segment(0) + " at byte " + std::to_string(record)) !=
               std::string::npos);
    BOOST_TEST(message.find("partition " + std::to_string(p) + " offset " + std::to_string(o)) !=
               std::string::npos);
  }
  // Without its index the segment is scanned, and the open fails instead.
  fs::remove(d.index(0));
  auto message = fault_of([&] { file_log log(d.options(16 << 10)); });
  BOOST_TEST(message.find(d.segment(0) + " at byte " + std::to_string(damaged.position)) !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_second_open_of_the_same_directory_is_refused_naming_the_holder) {
  log_dir d;
  file_log log(d.options());
  auto message = fault_of([&] { file_log again(d.options()); });
  BOOST_TEST(message.find("in use by another process (pid " + std::to_string(::getpid())) !=
             std::string::npos);
  // Another process is refused too, and leaves the log alone.
  pid_t child = ::fork();
  if (child == 0) {
    try {
      file_log other(d.options());
    } catch (const log_fault&) {
      ::_exit(0);
    }
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST(log.append({{"sb_1", "still mine"}}).get().ok());
}

// A holder killed with SIGKILL may leave a child that shares its open files (forked, not
// yet exec'd): the lock outlives the holder by that long. Opening waits for it.
BOOST_AUTO_TEST_CASE(a_lock_left_for_a_moment_by_a_killed_holders_child_is_waited_for) {
  log_dir d;
  { file_log log(d.options()); } // the directory exists
  int ready[2];
  BOOST_REQUIRE(::pipe(ready) == 0);
  pid_t holder = ::fork();
  if (holder == 0) {
    file_log log(d.options());
    if (::fork() == 0) { // shares the lock until it exits
      ::usleep(300'000);
      ::_exit(0);
    }
    (void)!::write(ready[1], "x", 1);
    ::pause();
  }
  char c;
  BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
  ::kill(holder, SIGKILL);
  int status = 0;
  ::waitpid(holder, &status, 0);
  const auto t0 = std::chrono::steady_clock::now();
  file_log log(d.options());
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)));
  BOOST_TEST(log.append({{"sb_1", "mine now"}}).get().ok());
  ::close(ready[0]);
  ::close(ready[1]);
}

BOOST_AUTO_TEST_CASE(reopening_with_another_partition_count_is_refused) {
  log_dir d;
  { file_log log(d.options()); }
  auto o = d.options();
  o.partitions = 16;
  auto message = fault_of([&] { file_log log(o); });
  BOOST_TEST(message.find("has 4 partitions, but was opened with 16") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(segments_roll_at_their_size_and_reopen_scans_only_what_lacks_an_index) {
  log_dir d;
  std::map<std::pair<int, std::int64_t>, std::string> written;
  {
    file_log log(d.options(8 << 10));
    append_each(log, 0, 400);
    written = contents(log);
  }
  std::uint64_t segments = 0;
  while (fs::exists(d.segment(segments))) {
    if (fs::exists(d.segment(segments + 1)))
      BOOST_TEST(fs::file_size(d.segment(segments)) <= (8u << 10));
    ++segments;
  }
  BOOST_TEST(segments > 5u);
  {
    file_log log(d.options(8 << 10));
    BOOST_TEST(log.recovery().segments == segments);
    BOOST_TEST(log.recovery().segments_scanned == 1u); // the last one
    BOOST_TEST(log.recovery().records == 400u);
    BOOST_TEST((contents(log) == written));
  }
  fs::remove(d.index(1));
  write_file(d.index(2), "not an index");
  file_log log(d.options(8 << 10));
  BOOST_TEST(log.recovery().segments_scanned == 3u);
  BOOST_TEST((contents(log) == written));
  BOOST_TEST(fs::exists(d.index(1))); // rebuilt
}

BOOST_AUTO_TEST_CASE(concurrent_appends_share_one_write_and_sync) {
  log_dir d;
  constexpr int threads = 32, each = 40;
  {
    file_log log(d.options());
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int i = 0; i < each; ++i)
          failures += !log.append({{key_of(t), value_of(i)}}).get().ok();
      });
    for (auto& th : pool)
      th.join();
    BOOST_TEST(failures.load() == 0);
  }
  // Each batch on disk is one write + one fdatasync; appends that arrived while one was
  // in flight went together into the next.
  auto batches = batches_of(read_file(d.segment(0)));
  BOOST_TEST_MESSAGE(threads * each << " appends in " << batches.size() << " batches");
  BOOST_TEST(batches.size() < static_cast<std::size_t>(threads * each));
}

BOOST_AUTO_TEST_CASE(what_the_callbacks_of_one_batch_append_is_written_as_one_batch) {
  // An append's callback that appends again is how the journal keeps the log busy. The
  // writer waits until every callback of a finished batch has run, so their appends go
  // into one batch instead of the first of them being synced alone.
  log_dir d;
  constexpr int fan_out = 16;
  std::promise<void> all_done;
  std::atomic<int> completions{0}, failures{0};
  const int expected = 1 + fan_out + fan_out;
  auto count = [&](const append_result& r) {
    failures += !r.ok();
    if (++completions == expected)
      all_done.set_value();
  };
  {
    file_log log(d.options());
    log.append({{key_of(0), value_of(0)}}, [&](append_result r) {
      count(r);
      for (int i = 1; i <= fan_out; ++i)
        log.append({{key_of(i), value_of(i)}}, [&, i](append_result r2) {
          count(r2);
          log.append({{key_of(i), value_of(100 + i)}}, count);
        });
    });
    BOOST_REQUIRE(all_done.get_future().wait_for(std::chrono::seconds(30)) ==
                  std::future_status::ready);
    BOOST_TEST(failures.load() == 0);
  }
  auto batches = batches_of(read_file(d.segment(0)));
  BOOST_REQUIRE(batches.size() == 3u);
  BOOST_TEST(batches[0].records == 1u);
  BOOST_TEST(batches[1].records == static_cast<std::uint32_t>(fan_out));
  BOOST_TEST(batches[2].records == static_cast<std::uint32_t>(fan_out));
}

BOOST_AUTO_TEST_CASE(append_and_wait_returns_durable_positions_readable_at_once) {
  log_dir d;
  file_log log(d.options());
  std::map<int, std::int64_t> next; // per partition
  for (int i = 0; i < 50; ++i) {
    std::vector<log_record> batch = {{key_of(i), value_of(i)}, {key_of(i + 1), value_of(i + 1)}};
    auto r = log.append_and_wait(batch);
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    BOOST_REQUIRE(r.positions.size() == 2u);
    for (std::size_t j = 0; j < 2; ++j) {
      const auto& pos = r.positions[j];
      BOOST_TEST(pos.partition == log.partition_for(batch[j].key));
      BOOST_TEST(pos.offset == next[pos.partition]++);
      auto read = log.read(pos.partition, pos.offset, 1);
      BOOST_REQUIRE(read.records.size() == 1u);
      BOOST_TEST(read.records[0].value == batch[j].value);
    }
  }
  BOOST_TEST(log.append_and_wait({}).ok());
  auto bad = log.append_and_wait({{"", "no key"}});
  BOOST_TEST(!bad.ok());
  BOOST_TEST((bad.failure->code == errc::invalid_argument));
  BOOST_TEST(bad.positions.empty());
}

BOOST_AUTO_TEST_CASE(append_and_wait_from_a_completion_callback_is_refused_not_a_deadlock) {
  log_dir d;
  file_log log(d.options());
  std::promise<append_result> inner;
  log.append({{"sb_1", "outer"}}, [&](append_result outer) {
    BOOST_TEST(outer.ok());
    inner.set_value(log.append_and_wait({{"sb_1", "inner"}}));
  });
  auto r = inner.get_future().get();
  BOOST_TEST(!r.ok());
  BOOST_TEST((r.failure->code == errc::invalid_argument));
  BOOST_TEST(log.end_offset(log.partition_for("sb_1")).offset == 1);
}

BOOST_AUTO_TEST_CASE(waiting_and_callback_appenders_share_group_commits_and_keep_key_order) {
  log_dir d;
  constexpr int threads = 24, each = 60;
  std::vector<std::vector<record_position>> acked(threads);
  {
    file_log log(d.options());
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::string key = "sb_t" + std::to_string(t);
        for (int i = 0; i < each; ++i) {
          std::vector<log_record> batch = {{key, std::to_string(i)}};
          // Threads of each kind: waiting, future (callback), and waiting again.
          auto r = t % 3 == 1 ? log.append(std::move(batch)).get() : log.append_and_wait(batch);
          failures += !r.ok();
          if (r.ok())
            acked[t].push_back(r.positions[0]);
        }
      });
    for (auto& th : pool)
      th.join();
    BOOST_TEST(failures.load() == 0);
  }
  file_log log(d.options());
  auto all = contents(log);
  BOOST_TEST(all.size() == static_cast<std::size_t>(threads * each));
  for (int t = 0; t < threads; ++t) {
    BOOST_REQUIRE(acked[t].size() == static_cast<std::size_t>(each));
    for (int i = 0; i < each; ++i) {
      // Each acknowledged position holds that record; one key's offsets increase.
      const auto& stored = all[{acked[t][i].partition, acked[t][i].offset}];
      BOOST_TEST(stored == std::to_string(i));
      if (i > 0)
        BOOST_TEST(acked[t][i].offset > acked[t][i - 1].offset);
    }
  }
  auto batches = batches_of(read_file(d.segment(0)));
  BOOST_TEST(batches.size() < static_cast<std::size_t>(threads * each));
}

BOOST_AUTO_TEST_CASE(appends_queued_when_the_log_closes_are_written_first) {
  log_dir d;
  std::atomic<int> completed{0}, failed{0};
  {
    file_log log(d.options());
    for (int i = 0; i < 500; ++i)
      log.append({{key_of(i), value_of(i)}}, [&](append_result r) {
        ++completed;
        failed += !r.ok();
      });
  }
  BOOST_TEST(completed.load() == 500);
  BOOST_TEST(failed.load() == 0);
  file_log log(d.options());
  BOOST_TEST(log.recovery().records == 500u);
}

boost::test_tools::assertion_result root(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(::geteuid() == 0);
  r.message() << "mounting a small tmpfs needs root";
  return r;
}

// `wait`: append_and_wait instead of append(batch).get().
void check_a_failed_write_is_never_reported_durable(bool wait) {
  sandboxd::test::temp_dir tmp{"file-log-full"};
  // A 1 MiB file system fills up partway through the appends.
  BOOST_REQUIRE_MESSAGE(::mount("tmpfs", tmp.path().c_str(), "tmpfs", 0, "size=1m") == 0,
                        "cannot mount a small tmpfs: " << std::strerror(errno));
  struct unmount {
    std::string path;
    ~unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } guard{tmp.path()};
  file_log_options o;
  o.dir = tmp.path() + "/log";
  o.partitions = 4;
  o.segment_bytes = 64 << 10;
  std::map<std::pair<int, std::int64_t>, std::string> acknowledged;
  int failures = 0;
  std::string first_failure;
  {
    file_log log(o);
    for (int i = 0; i < 400; ++i) {
      std::vector<log_record> batch = {{key_of(i), std::string(4000, 'x') + std::to_string(i)}};
      auto r = wait ? log.append_and_wait(batch) : log.append(batch).get();
      if (r.ok()) {
        BOOST_TEST(failures == 0); // nothing succeeds once a write failed
        acknowledged[{r.positions[0].partition, r.positions[0].offset}] = batch[0].value;
      } else {
        BOOST_TEST(r.positions.empty());
        BOOST_TEST((r.failure->code == errc::unavailable));
        BOOST_TEST(!r.maybe_stored); // cut back, or never written
        if (failures++ == 0)
          first_failure = r.failure->message;
      }
    }
  }
  BOOST_TEST_MESSAGE(first_failure);
  BOOST_TEST(failures > 0);
  BOOST_TEST(first_failure.find("No space left on device") != std::string::npos);
  // Everything acknowledged is there after reopening (with room to spare again).
  ::mount("tmpfs", tmp.path().c_str(), "tmpfs", MS_REMOUNT, "size=8m");
  file_log log(o);
  auto after = contents(log);
  std::size_t lost = 0;
  for (const auto& [pos, value] : acknowledged)
    lost += after.count(pos) == 0 || after[pos] != value;
  BOOST_TEST(lost == 0u);
  // And nothing else: the failed batch was cut back, a reopen does not bring it back.
  BOOST_TEST(after.size() == acknowledged.size());
  BOOST_TEST(acknowledged.size() > 50u);
}

BOOST_AUTO_TEST_CASE(a_failed_write_is_never_reported_durable_and_stops_the_log,
                     *boost::unit_test::precondition(root)) {
  check_a_failed_write_is_never_reported_durable(false);
}

BOOST_AUTO_TEST_CASE(a_failed_write_is_never_reported_durable_to_append_and_wait,
                     *boost::unit_test::precondition(root)) {
  check_a_failed_write_is_never_reported_durable(true);
}
