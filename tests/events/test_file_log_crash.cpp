// Crash test of file_log: a child process appends from several threads and reports every
// acknowledged record to the parent through a pipe; the parent SIGKILLs it at a random
// moment. After every round the reopened log holds every acknowledged record intact and
// its last segment ends exactly at a batch boundary. 100 rounds on one log directory, so
// each round also recovers what the earlier crashes left.
#define BOOST_TEST_MODULE file_log_crash
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "events/file_log_format.hpp"
#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <poll.h>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace sandboxd::events;
namespace fs = std::filesystem;
namespace lf = sandboxd::events::file_log_format;

namespace {

constexpr int k_rounds = 100;
constexpr int k_threads = 4;
constexpr int k_records_per_round = 1500; // per child, so the directory stays small

// What the child reports for each acknowledged record (written whole: < PIPE_BUF).
struct ack {
  std::int32_t partition;
  std::int64_t offset;
  std::uint32_t round;
  std::uint32_t thread;
  std::uint32_t seq;
};

std::string key_of(std::uint32_t thread, std::uint32_t seq) {
  return "sb_t" + std::to_string(thread) + "_" + std::to_string(seq % 5);
}

std::string value_of(std::uint32_t round, std::uint32_t thread, std::uint32_t seq) {
  return "r" + std::to_string(round) + "-t" + std::to_string(thread) + "-s" + std::to_string(seq) +
         std::string(40 + seq % 200, 'x');
}

file_log_options options_for(const std::string& dir) {
  file_log_options o;
  o.dir = dir;
  o.partitions = 4;
  o.segment_bytes = 64 << 10; // rolls often, so crashes also land around a roll
  return o;
}

[[noreturn]] void run_child(const std::string& dir, std::uint32_t round, int out) {
  try {
    file_log log(options_for(dir));
    std::atomic<int> budget{k_records_per_round};
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < k_threads; ++t)
      threads.emplace_back([&, t] {
        std::uint32_t seq = 0;
        while (budget.fetch_sub(3) > 0) {
          std::vector<log_record> batch;
          const std::uint32_t first = seq;
          for (std::uint32_t j = 0; j < 1 + seq % 3; ++j, ++seq)
            batch.push_back({key_of(t, seq), value_of(round, t, seq)});
          // Half the threads wait in append_and_wait, half on append's future.
          auto r = t % 2 == 0 ? log.append_and_wait(batch) : log.append(std::move(batch)).get();
          if (!r.ok())
            ::_exit(3);
          for (std::uint32_t j = 0; j < r.positions.size(); ++j) {
            ack a{r.positions[j].partition, r.positions[j].offset, round, t, first + j};
            if (::write(out, &a, sizeof a) != static_cast<ssize_t>(sizeof a))
              ::_exit(4);
          }
        }
      });
    for (auto& th : threads)
      th.join();
    ::pause(); // the parent kills it
  } catch (...) {
    ::_exit(2);
  }
  ::_exit(5);
}

// Reads whole acks from `fd` into `out` until `deadline` or until at least `want`
// arrived; false at end of file.
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

// The last segment ends exactly where its last batch ends.
bool tail_is_clean(const std::string& dir) {
  std::uint64_t last = 0;
  while (fs::exists(dir + "/" + lf::segment_file_name(last + 1)))
    ++last;
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

} // namespace

BOOST_AUTO_TEST_CASE(sigkilled_appender_loses_no_acknowledged_record_in_100_rounds) {
  sandboxd::test::temp_dir tmp{"file-log-crash"};
  const std::string dir = tmp.path() + "/log";
  std::mt19937 rng(20261130);
  std::map<std::pair<std::int32_t, std::int64_t>, std::string> acknowledged;
  std::size_t lost = 0, unclean_tails = 0, torn_recoveries = 0, killed_midway = 0;
  for (std::uint32_t round = 0; round < k_rounds; ++round) {
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
      ::close(fds[0]);
      run_child(dir, round, fds[1]);
    }
    ::close(fds[1]);
    std::vector<ack> acks;
    std::string pending;
    // Kill after a random number of acknowledged records (0 kills during open), plus a
    // random sub-millisecond delay, so the kill lands anywhere in the append cycle.
    const std::size_t kill_after = std::uniform_int_distribution<std::size_t>(0, 1400)(rng);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    read_acks(fds[0], pending, acks, kill_after, deadline);
    std::this_thread::sleep_for(
      std::chrono::microseconds(std::uniform_int_distribution<int>(0, 800)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                          "round " << round << ": the child ended by itself, status " << status);
    read_acks(fds[0], pending, acks, SIZE_MAX,
              std::chrono::steady_clock::now() + std::chrono::seconds(5));
    ::close(fds[0]);
    killed_midway += acks.size() < static_cast<std::size_t>(k_records_per_round) - 3 * k_threads;
    for (const auto& a : acks)
      acknowledged[{a.partition, a.offset}] = value_of(a.round, a.thread, a.seq);

    file_log log(options_for(dir));
    torn_recoveries += log.recovery().truncated_bytes > 0;
    for (const auto& [pos, value] : acknowledged) {
      auto r = log.read(pos.first, pos.second, 1);
      lost += !r.ok() || r.records.size() != 1 || r.records[0].value != value;
    }
    unclean_tails += !tail_is_clean(dir);
    if (lost > 0 || unclean_tails > 0)
      BOOST_FAIL("round " << round << ": " << lost << " acknowledged records lost, "
                          << unclean_tails << " unclean tails");
  }
  BOOST_TEST_MESSAGE(acknowledged.size() << " acknowledged records checked; " << killed_midway
                                         << " rounds killed mid-append; " << torn_recoveries
                                         << " reopenings cut a torn tail");
  BOOST_TEST(lost == 0u);
  BOOST_TEST(unclean_tails == 0u);
  BOOST_TEST(killed_midway > k_rounds / 2u);
}
