// file_log under power loss and failed fsyncs, on powerloss_fs (tests/support/powerloss_fs.hpp):
// a FUSE file system that, at a simulated power loss, keeps each file's content as of its
// last fsync/fdatasync (plus a seeded random subset of the 4 KiB pages written since, so
// that writes tear) and each directory's entries as of its last fsync, and drops the rest.
// SIGKILL alone would keep the page cache and hide a missing fdatasync; this model does not.
//
// The crash test: 100 rounds. In each, a child process appends values of 40 B to 4 MiB from
// several threads and reports every acknowledged record to the parent through a pipe; the
// parent cuts the power at a random point — after a random number of acknowledgements and
// a random delay, or after a random number of write requests (so inside a write) — then
// SIGKILLs the child, crashes the file system, reopens the log and
// checks, value by value, that every acknowledged record is there; that every record the
// log holds is one that was appended, byte for byte; and that a torn tail, when recovery
// found one, was cut back to a batch boundary. Torn tails must occur. Ten rounds share a
// log directory, so each round also recovers what the earlier crashes left. The seed is
// printed and taken from SANDBOXD_TEST_SEED.
#define BOOST_TEST_MODULE file_log_crash
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "events/file_log_format.hpp"
#include "tests/support/powerloss_fs.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <poll.h>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace sandboxd::events;
using sandboxd::test::powerloss_fs;
namespace fs = std::filesystem;
namespace lf = sandboxd::events::file_log_format;

namespace {

constexpr int k_rounds = 100;
constexpr int k_rounds_per_log = 10;
constexpr int k_threads = 3;
constexpr std::uint64_t k_bytes_per_round = 12 << 20; // per child, so memory stays small
constexpr std::uint64_t k_min_value = 40;
constexpr std::uint64_t k_max_value = 4 << 20;

boost::test_tools::assertion_result fuse_usable(boost::unit_test::test_unit_id) {
  const std::string why = powerloss_fs::unavailable_reason();
  boost::test_tools::assertion_result r(why.empty());
  r.message() << why;
  return r;
}

// What the child reports for each acknowledged record (written whole: < PIPE_BUF); a
// partition of -1 reports a failure instead (an append or the open failed).
struct ack {
  std::int32_t partition;
  std::int64_t offset;
  std::uint32_t round;
  std::uint32_t thread;
  std::uint32_t seq;
  std::uint32_t size;
};

std::string key_of(std::uint32_t thread, std::uint32_t seq) {
  return "sb_t" + std::to_string(thread) + "_" + std::to_string(seq % 5);
}

// The value of record (round, thread, seq) with `size` bytes: a readable prefix naming it,
// then bytes that depend on all three, so that any mix-up or damage shows.
std::string value_of(std::uint32_t round, std::uint32_t thread, std::uint32_t seq,
                     std::size_t size) {
  std::string v =
    "r" + std::to_string(round) + "/t" + std::to_string(thread) + "/s" + std::to_string(seq) + "/";
  std::uint64_t x = (std::uint64_t{round} << 40) ^ (std::uint64_t{thread} << 32) ^ seq;
  v.reserve(size);
  while (v.size() < size) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v.push_back(static_cast<char>(x >> 56));
  }
  v.resize(size);
  return v;
}

// Sizes spread evenly over the orders of magnitude from 40 B to 4 MiB.
std::size_t size_for(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> e(std::log(double(k_min_value)),
                                           std::log(double(k_max_value)));
  return static_cast<std::size_t>(std::exp(e(rng)));
}

file_log_options options_for(const std::string& dir) {
  file_log_options o;
  o.dir = dir;
  o.partitions = 4;
  o.segment_bytes = 1 << 20; // rolls often, so crashes also land around a roll
  return o;
}

[[noreturn]] void run_child(const std::string& dir, std::uint32_t round, std::uint64_t seed,
                            int out) {
  try {
    file_log log(options_for(dir));
    std::atomic<std::int64_t> budget{static_cast<std::int64_t>(k_bytes_per_round)};
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < k_threads; ++t)
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(seed ^ (std::uint64_t{t} << 48) ^ round);
        std::uint32_t seq = 0;
        for (;;) {
          std::vector<log_record> batch;
          std::vector<std::uint32_t> sizes;
          const std::uint32_t first = seq;
          std::int64_t bytes = 0;
          for (std::uint32_t j = 0; j < 1 + rng() % 3; ++j, ++seq) {
            sizes.push_back(static_cast<std::uint32_t>(size_for(rng)));
            bytes += sizes.back();
            batch.push_back({key_of(t, seq), value_of(round, t, seq, sizes.back())});
          }
          if (budget.fetch_sub(bytes) < bytes)
            break;
          // Some threads wait in append_and_wait, the others on append's future.
          auto r = t % 2 == 0 ? log.append_and_wait(batch) : log.append(std::move(batch)).get();
          if (!r.ok()) {
            ack failed{-1, 0, round, t, first, 0};
            (void)!::write(out, &failed, sizeof failed);
            return; // with the power off, nothing works any more
          }
          for (std::uint32_t j = 0; j < r.positions.size(); ++j) {
            ack a{r.positions[j].partition, r.positions[j].offset, round, t, first + j, sizes[j]};
            if (::write(out, &a, sizeof a) != static_cast<ssize_t>(sizeof a))
              ::_exit(4);
          }
        }
      });
    for (auto& th : threads)
      th.join();
  } catch (...) {
    ack failed{-1, -1, round, 0, 0, 0};
    (void)!::write(out, &failed, sizeof failed);
  }
  ::close(out); // the parent stops waiting for acknowledgements
  ::pause();    // and kills it
  ::_exit(5);
}

// Reads whole acks from `fd` into `out` until `deadline` or until at least `want` arrived;
// false at end of file.
bool read_acks(int fd, std::string& pending, std::vector<ack>& out, std::size_t want,
               std::chrono::steady_clock::time_point deadline) {
  while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) <= 0)
      continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    pending.append(buf, static_cast<std::size_t>(n));
    while (pending.size() >= sizeof(ack)) {
      ack a;
      std::memcpy(&a, pending.data(), sizeof a);
      out.push_back(a);
      pending.erase(0, sizeof a);
    }
  }
  return true;
}

std::uint64_t last_segment(const std::string& dir) {
  std::uint64_t last = 0;
  while (fs::exists(dir + "/" + lf::segment_file_name(last + 1)))
    ++last;
  return last;
}

// The last segment ends exactly where its last batch ends.
bool tail_is_clean(const std::string& dir) {
  const std::uint64_t last = last_segment(dir);
  std::ifstream in(dir + "/" + lf::segment_file_name(last), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (!lf::check_segment_header(bytes.data(), bytes.size(), last))
    return false;
  std::uint64_t at = lf::k_segment_header_size;
  while (at < bytes.size()) {
    std::uint32_t length, count;
    if (lf::check_batch(bytes.data() + at, bytes.size() - at, length, count) != lf::batch_check::ok)
      return false;
    at += lf::k_batch_header_size + length;
  }
  return at == bytes.size();
}

// Every record of the log is one the children appended, byte for byte; how many.
std::size_t check_every_record_was_appended(file_log& log, std::size_t& strangers) {
  std::size_t n = 0;
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    for (std::int64_t at = 0;;) {
      auto r = log.read(p, at, 64);
      BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
      if (r.records.empty())
        break;
      for (const auto& rec : r.records) {
        unsigned round = 0, thread = 0, seq = 0;
        const bool named =
          std::sscanf(rec.value.c_str(), "r%u/t%u/s%u/", &round, &thread, &seq) == 3;
        strangers += !named || rec.value != value_of(round, thread, seq, rec.value.size());
      }
      n += r.records.size();
      at += static_cast<std::int64_t>(r.records.size());
    }
  return n;
}

void sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::fsync(fd) == 0);
  ::close(fd);
}

struct mounted {
  sandboxd::test::temp_dir tmp{"file-log-powerloss"};
  std::string mnt = tmp.path() + "/mnt";
  std::unique_ptr<powerloss_fs> fs;

  explicit mounted(std::uint64_t seed) {
    fs::create_directory(mnt);
    fs = std::make_unique<powerloss_fs>(mnt, seed);
  }
  ~mounted() { fs.reset(); }
};

} // namespace

BOOST_AUTO_TEST_CASE(no_acknowledged_record_is_lost_to_100_power_losses,
                     *boost::unit_test::precondition(fuse_usable)) {
  const std::uint64_t seed = sandboxd::test::test_seed("file_log power loss");
  std::mt19937_64 rng(seed);
  mounted m(seed);
  std::string dir;
  struct acked_record {
    std::uint32_t round, thread, seq, size;
  };
  std::map<std::pair<std::int32_t, std::int64_t>, acked_record> acknowledged;
  std::size_t lost = 0, strangers = 0, unclean_tails = 0, torn_recoveries = 0, powered_off = 0,
              checked = 0;
  std::uint64_t torn_bytes = 0;
  std::uint64_t round_writes = 0; // the most write requests a round made with the power on
  for (std::uint32_t round = 0; round < k_rounds; ++round) {
    if (round % k_rounds_per_log == 0) {
      if (!dir.empty()) {
        fs::remove_all(dir);
        sync_dir(m.mnt);
      }
      dir = m.mnt + "/log" + std::to_string(round / k_rounds_per_log);
      acknowledged.clear();
    }
    const std::uint64_t writes_before = m.fs->write_requests();
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    const std::uint64_t child_seed = rng();
    pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
      ::close(fds[0]);
      run_child(dir, round, child_seed, fds[1]);
    }
    ::close(fds[1]);
    std::vector<ack> acks;
    std::string pending;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    if (rng() % 2 == 0) {
      // After a random number of acknowledged records (0: during open or the first
      // appends), plus a random delay, so the cut lands anywhere in the append cycle. A
      // round appends about 35 records (12 MiB of values averaging about 360 KB).
      const std::size_t kill_after = std::uniform_int_distribution<std::size_t>(0, 24)(rng);
      read_acks(fds[0], pending, acks, kill_after, deadline);
      std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
    } else {
      // After a random number of write requests, up to as many as a whole round made
      // (about 40: the kernel sends up to 1 MiB in one): inside a write.
      m.fs->power_off_after_writes(std::uniform_int_distribution<std::int64_t>(
        0, static_cast<std::int64_t>(std::max<std::uint64_t>(round_writes, 8)))(rng));
      while (!m.fs->powered_off() && std::chrono::steady_clock::now() < deadline &&
             read_acks(fds[0], pending, acks, acks.size() + 1,
                       std::chrono::steady_clock::now() + std::chrono::milliseconds(1))) {
      }
      powered_off += m.fs->powered_off();
    }
    const bool off = m.fs->powered_off();
    ::kill(child, SIGKILL);
    if (!off)
      round_writes = std::max(round_writes, m.fs->write_requests() - writes_before);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                          "round " << round << ": the child ended by itself, status " << status);
    read_acks(fds[0], pending, acks, SIZE_MAX,
              std::chrono::steady_clock::now() + std::chrono::seconds(5));
    ::close(fds[0]);
    for (const auto& a : acks) {
      if (a.partition >= 0)
        acknowledged[{a.partition, a.offset}] = {a.round, a.thread, a.seq, a.size};
      else
        BOOST_REQUIRE_MESSAGE(off, "round " << round << ": an append failed with the power on");
    }

    m.fs->crash();

    file_log log(options_for(dir));
    const auto& rec = log.recovery();
    if (rec.truncated_bytes > 0) {
      ++torn_recoveries;
      torn_bytes += rec.truncated_bytes;
      // A torn tail is cut from the last segment, back to a batch boundary.
      BOOST_TEST(rec.truncated_segment == dir + "/" + lf::segment_file_name(last_segment(dir)));
    }
    for (const auto& [pos, a] : acknowledged) {
      auto r = log.read(pos.first, pos.second, 1);
      lost += !r.ok() || r.records.size() != 1 ||
              r.records[0].value != value_of(a.round, a.thread, a.seq, a.size);
      ++checked;
    }
    const std::size_t held = check_every_record_was_appended(log, strangers);
    unclean_tails += !tail_is_clean(dir);
    if (lost > 0 || unclean_tails > 0 || strangers > 0 || held < acknowledged.size())
      BOOST_FAIL("round " << round << " (seed " << seed << "): " << lost
                          << " acknowledged records lost or changed, " << strangers
                          << " records never appended, " << unclean_tails
                          << " tails not cut to a batch boundary; the log holds " << held
                          << " records, " << acknowledged.size() << " were acknowledged");
  }
  BOOST_TEST_MESSAGE(checked << " acknowledged records checked value by value; " << powered_off
                             << " of " << k_rounds << " power cuts after a chosen write request; "
                             << torn_recoveries << " reopenings cut a torn tail (" << torn_bytes
                             << " bytes)");
  BOOST_TEST(lost == 0u);
  BOOST_TEST(unclean_tails == 0u);
  BOOST_TEST(strangers == 0u);
  BOOST_TEST(powered_off > k_rounds / 4u);
  BOOST_TEST(torn_recoveries > 0u, "no crash tore a write: the test did not test recovery");
}

namespace {

// Appends `n` records and returns them by position; each must be acknowledged.
std::map<std::pair<std::int32_t, std::int64_t>, std::string> append_some(file_log& log, int n) {
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> out;
  for (int i = 0; i < n; ++i) {
    const std::string value = "acknowledged " + std::to_string(i) + std::string(5000, 'a');
    auto r = log.append_and_wait({{"sb_" + std::to_string(i % 3), value}});
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    out[{r.positions[0].partition, r.positions[0].offset}] = value;
  }
  return out;
}

std::map<std::pair<std::int32_t, std::int64_t>, std::string> contents(file_log& log) {
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> out;
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    auto r = log.read(p, 0, 100000);
    BOOST_REQUIRE(r.ok());
    for (auto& rec : r.records)
      out[{p, rec.offset}] = rec.value;
  }
  return out;
}

// A batch whose fdatasync fails is cut back out of the segment (its pages stay in the page
// cache otherwise, and a reopen would read them): the append fails as certainly not stored,
// the log takes no more appends, and a reopen in the same boot — no power loss — finds
// exactly the acknowledged records. `wait`: append_and_wait, else a callback.
void check_a_failed_fsync_is_not_resurrected(bool wait) {
  mounted m(sandboxd::test::test_seed("file_log failed fsync"));
  const auto o = options_for(m.mnt + "/log");
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> acknowledged;
  {
    file_log log(o);
    acknowledged = append_some(log, 5);
    m.fs->fail_next_fsyncs(1);
    std::vector<log_record> batch = {{"sb_0", "its fsync fails"}, {"sb_1", "and mine"}};
    auto r = wait ? log.append_and_wait(batch) : log.append(batch).get();
    BOOST_TEST_MESSAGE((r.ok() ? std::string("ok") : r.failure->message));
    BOOST_REQUIRE(!r.ok());
    BOOST_TEST((r.failure->code == errc::unavailable));
    BOOST_TEST(!r.maybe_stored);
    BOOST_TEST(r.failure->message.find("so none of it is stored") != std::string::npos);
    auto after = log.append_and_wait({{"sb_0", "refused"}});
    BOOST_TEST(!after.ok());
    BOOST_TEST(!after.maybe_stored);
  }
  file_log log(o);
  BOOST_TEST((contents(log) == acknowledged));
  BOOST_TEST(log.recovery().truncated_bytes == 0u);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_batch_whose_fsync_failed_is_cut_back_and_no_reopen_finds_it,
                     *boost::unit_test::precondition(fuse_usable)) {
  check_a_failed_fsync_is_not_resurrected(true);
}

BOOST_AUTO_TEST_CASE(a_batch_whose_fsync_failed_is_cut_back_for_callback_appends_too,
                     *boost::unit_test::precondition(fuse_usable)) {
  check_a_failed_fsync_is_not_resurrected(false);
}

// When cutting the batch back fails as well (its fsync fails too), nothing can say whether
// the batch is on the disk: the append is maybe_stored, and the log takes no more appends.
BOOST_AUTO_TEST_CASE(a_failed_fsync_whose_cut_back_fails_too_is_maybe_stored,
                     *boost::unit_test::precondition(fuse_usable)) {
  mounted m(sandboxd::test::test_seed("file_log failed cut-back"));
  const auto o = options_for(m.mnt + "/log");
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> acknowledged;
  {
    file_log log(o);
    acknowledged = append_some(log, 3);
    m.fs->fail_next_fsyncs(2);
    auto r = log.append_and_wait({{"sb_0", "fate unknown"}});
    BOOST_TEST_MESSAGE((r.ok() ? std::string("ok") : r.failure->message));
    BOOST_REQUIRE(!r.ok());
    BOOST_TEST(r.maybe_stored);
    BOOST_TEST(r.failure->message.find("whether it is stored is unknown") != std::string::npos);
    auto after = log.append({{"sb_0", "refused"}}).get();
    BOOST_TEST(!after.ok());
    BOOST_TEST(!after.maybe_stored);
  }
  m.fs->crash();
  file_log log(o);
  auto after = contents(log);
  for (const auto& [pos, value] : acknowledged)
    BOOST_TEST(after[pos] == value);
}

// A new data directory and the directories made for it are synced into their parents: a
// power loss right after the first acknowledged append keeps the log and its record.
BOOST_AUTO_TEST_CASE(a_new_data_directory_survives_a_power_loss_with_its_parents,
                     *boost::unit_test::precondition(fuse_usable)) {
  mounted m(sandboxd::test::test_seed("file_log new directory"));
  const auto o = options_for(m.mnt + "/var/lib/sandboxd/log");
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> acknowledged;
  {
    file_log log(o);
    acknowledged = append_some(log, 1);
  }
  m.fs->crash();
  BOOST_REQUIRE(fs::exists(o.dir + "/META"));
  file_log log(o);
  BOOST_TEST((contents(log) == acknowledged));
}
