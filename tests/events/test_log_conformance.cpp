// The event_log conformance suite: what every event log guarantees, run against each
// implementation. One binary, one ctest entry per log (tests/events/CMakeLists.txt):
// SANDBOXD_LOG_UNDER_TEST in the environment selects file_log (`file`), kafka_log on the real
// broker of the ctest fixture (`kafka`), kafka_log on librdkafka's mock cluster
// (`kafka_mock`), or kafka_log with fenced (transactional) appends on the real broker
// (`kafka_fenced`), whose offsets increase but are not dense (commit markers take offsets).
#define BOOST_TEST_MODULE log_conformance
#include <boost/test/unit_test.hpp>

#include "events/event_log.hpp"
#include "events/file_log.hpp"
#include "events/kafka_log.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_group.hpp"
#include "tests/support/kafka_log_options.hpp"
#include "tests/support/kafka_mock.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

using namespace sandboxd::events;
using namespace std::chrono_literals;

namespace {

constexpr std::int32_t k_partitions = 8;

enum class log_kind { file, kafka_broker, kafka_mock, kafka_fenced };

log_kind kind_from_environment() {
  const char* v = std::getenv("SANDBOXD_LOG_UNDER_TEST");
  const std::string s = v ? v : "";
  if (s == "file")
    return log_kind::file;
  if (s == "kafka")
    return log_kind::kafka_broker;
  if (s == "kafka_mock")
    return log_kind::kafka_mock;
  if (s == "kafka_fenced")
    return log_kind::kafka_fenced;
  std::fprintf(stderr,
               "test_log_conformance: SANDBOXD_LOG_UNDER_TEST is '%s'; it names the log under "
               "test: file, kafka, kafka_mock or kafka_fenced (the ctest entries set it)\n",
               s.c_str());
  std::exit(2);
}

const log_kind k_log = kind_from_environment();

// Whether the n-th record of a partition has offset n (every log but fenced kafka_log).
const bool k_dense = k_log != log_kind::kafka_fenced;

std::string fresh_topic() {
  static std::atomic<int> n{0};
  return "conformance-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// Where one test's log lives; open() may be called again after the previous log is gone.
class place {
public:
  place() {
    if (k_log == log_kind::file) {
      dir_.emplace("log-conformance");
    } else if (k_log == log_kind::kafka_mock) {
      // The mock cluster has no admin API: the topic is made here, as in production the
      // admin API makes it (which the real-broker entries of this suite exercise).
      mock_.emplace();
      mock_->create_topic(topic_, k_partitions);
      bootstrap_ = mock_->bootstrap();
    } else {
      bootstrap_ = sandboxd::test::shared_kafka_bootstrap();
    }
  }

  std::unique_ptr<event_log> open() {
    switch (k_log) {
    case log_kind::file: {
      file_log_options o;
      o.dir = dir_->path() + "/log";
      o.partitions = k_partitions;
      o.segment_bytes = 256 << 10; // small, so the suite crosses segment boundaries
      return std::make_unique<file_log>(o);
    }
    case log_kind::kafka_mock:
      return std::make_unique<kafka_log>(
        sandboxd::test::mock_cluster_log(bootstrap_, topic_, k_partitions));
    case log_kind::kafka_fenced: {
      if (!member_) {
        // The topic first (an idempotent log makes it with the configs kafka_log requires),
        // then the membership every transaction commits with.
        { kafka_log made(sandboxd::test::single_broker_log(bootstrap_, topic_, k_partitions)); }
        member_ = std::make_unique<sandboxd::test::kafka_group_member>(bootstrap_,
                                                                       topic_ + ".owners", topic_);
        BOOST_REQUIRE(member_->wait_generation_after(0, 60s));
      }
      auto o = sandboxd::test::single_broker_log(bootstrap_, topic_, k_partitions);
      o.transactional_id = topic_ + ".writer";
      o.writer = "conformance";
      o.group_metadata = [m = member_.get()] { return m->metadata(); };
      return std::make_unique<kafka_log>(o);
    }
    case log_kind::kafka_broker:
      break;
    }
    return std::make_unique<kafka_log>(
      sandboxd::test::single_broker_log(bootstrap_, topic_, k_partitions));
  }

private:
  std::optional<sandboxd::test::temp_dir> dir_;
  std::optional<sandboxd::test::kafka_mock_cluster> mock_;
  std::string topic_ = fresh_topic();
  std::unique_ptr<sandboxd::test::kafka_group_member> member_;
  std::string bootstrap_;
};

// A record whose value says which key and which position in that key's history it is.
log_record keyed(const std::string& key, int seq) {
  return {key,
          key + "#" + std::to_string(seq) + std::string(static_cast<std::size_t>(seq % 50), 'x')};
}

int seq_of(const std::string& value) {
  auto hash = value.find('#');
  return std::stoi(value.substr(hash + 1));
}

append_result append_now(event_log& log, std::vector<log_record> batch) {
  auto f = log.append(std::move(batch));
  BOOST_REQUIRE(f.wait_for(60s) == std::future_status::ready);
  return f.get();
}

// Every record of every partition, read in chunks of `chunk`.
std::vector<stored_record> read_everything(event_log& log, std::size_t chunk = 97) {
  std::vector<stored_record> all;
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    auto end = log.end_offset(p);
    BOOST_REQUIRE(end.ok());
    std::int64_t at = 0;
    while (at < end.offset) {
      auto r = log.read(p, at, chunk);
      BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
      BOOST_REQUIRE(!r.records.empty());
      BOOST_REQUIRE(r.records.size() <= chunk);
      at = r.records.back().offset + 1;
      for (auto& rec : r.records)
        all.push_back(std::move(rec));
    }
  }
  return all;
}

// The log holds exactly `sent` (as key/value pairs): each partition's offsets are dense
// from 0 (increasing, for a log whose offsets are not dense), each key is in
// partition_for(key), and each key's records are in sequence order.
void check_log_holds(event_log& log, const std::vector<log_record>& sent) {
  auto all = read_everything(log);
  BOOST_TEST(all.size() == sent.size());
  std::map<std::int32_t, std::int64_t> next_offset;
  std::map<std::string, int> last_seq;
  std::multiset<std::pair<std::string, std::string>> got;
  std::size_t dense_violations = 0, partition_violations = 0, order_violations = 0;
  for (const auto& r : all) {
    if (k_dense) {
      dense_violations += r.offset != next_offset[r.partition]++;
    } else {
      dense_violations += r.offset < next_offset[r.partition];
      next_offset[r.partition] = r.offset + 1;
    }
    partition_violations += r.partition != partition_for(r.key, log.partitions());
    auto [it, fresh] = last_seq.emplace(r.key, seq_of(r.value));
    if (!fresh) {
      order_violations += seq_of(r.value) <= it->second;
      it->second = seq_of(r.value);
    }
    got.insert({r.key, r.value});
  }
  BOOST_TEST(dense_violations == 0u);
  BOOST_TEST(partition_violations == 0u);
  BOOST_TEST(order_violations == 0u);
  std::multiset<std::pair<std::string, std::string>> want;
  for (const auto& r : sent)
    want.insert({r.key, r.value});
  BOOST_TEST((got == want));
}

} // namespace

BOOST_AUTO_TEST_CASE(appended_records_read_back_per_key_in_order_with_dense_offsets) {
  place where;
  auto log = where.open();
  BOOST_TEST(log->partitions() == k_partitions);
  std::vector<log_record> sent;
  std::map<std::string, int> seq;
  std::size_t positions_wrong = 0;
  for (int b = 0; b < 150; ++b) {
    std::vector<log_record> batch;
    for (int i = 0; i < 1 + b % 13; ++i) {
      std::string key = "sb_" + std::to_string((b * 31 + i * 7) % 40);
      batch.push_back(keyed(key, seq[key]++));
    }
    auto r = append_now(*log, batch);
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    BOOST_REQUIRE(r.positions.size() == batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto back = log->read(r.positions[i].partition, r.positions[i].offset, 1);
      positions_wrong += !back.ok() || back.records.size() != 1 ||
                         back.records[0].key != batch[i].key ||
                         back.records[0].value != batch[i].value;
    }
    sent.insert(sent.end(), batch.begin(), batch.end());
  }
  BOOST_TEST(positions_wrong == 0u);
  check_log_holds(*log, sent);
}

BOOST_AUTO_TEST_CASE(a_record_is_readable_as_soon_as_its_append_completes) {
  place where;
  auto log = where.open();
  std::size_t unreadable = 0;
  for (int i = 0; i < 200; ++i) {
    auto rec = keyed("sb_read_" + std::to_string(i % 5), i);
    auto r = append_now(*log, {rec});
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    auto end = log->end_offset(r.positions[0].partition);
    BOOST_REQUIRE(end.ok());
    BOOST_TEST(end.offset > r.positions[0].offset);
    auto back = log->read(r.positions[0].partition, r.positions[0].offset, 10);
    unreadable += !back.ok() || back.records.empty() || back.records[0].value != rec.value;
  }
  BOOST_TEST(unreadable == 0u);
}

BOOST_AUTO_TEST_CASE(offsets_continue_after_close_and_reopen) {
  place where;
  std::vector<log_record> sent;
  std::map<std::string, int> seq;
  auto batch_of = [&](int n, int salt) {
    std::vector<log_record> batch;
    for (int i = 0; i < n; ++i) {
      std::string key = "sb_re_" + std::to_string((salt + i) % 23);
      batch.push_back(keyed(key, seq[key]++));
    }
    return batch;
  };
  std::vector<std::int64_t> ends_before(k_partitions);
  {
    auto log = where.open();
    for (int b = 0; b < 40; ++b) {
      auto batch = batch_of(8, b);
      BOOST_REQUIRE(append_now(*log, batch).ok());
      sent.insert(sent.end(), batch.begin(), batch.end());
    }
    for (int p = 0; p < k_partitions; ++p)
      ends_before[p] = log->end_offset(p).offset;
  }
  auto log = where.open();
  for (int p = 0; p < k_partitions; ++p)
    BOOST_TEST(log->end_offset(p).offset == ends_before[p]);
  auto batch = batch_of(50, 7);
  auto r = append_now(*log, batch);
  BOOST_REQUIRE(r.ok());
  std::map<std::int32_t, std::int64_t> expect = {};
  for (int p = 0; p < k_partitions; ++p)
    expect[p] = ends_before[p];
  std::size_t discontinuous = 0;
  for (const auto& pos : r.positions) {
    if (k_dense) {
      discontinuous += pos.offset != expect[pos.partition]++;
    } else {
      discontinuous += pos.offset < expect[pos.partition];
      expect[pos.partition] = pos.offset + 1;
    }
  }
  BOOST_TEST(discontinuous == 0u);
  sent.insert(sent.end(), batch.begin(), batch.end());
  check_log_holds(*log, sent);
}

BOOST_AUTO_TEST_CASE(concurrent_appenders_get_unique_dense_offsets_and_keep_key_order) {
  place where;
  auto log = where.open();
  constexpr int threads = 16, appends = 150;
  std::mutex mu;
  std::vector<log_record> sent;
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      // Each thread owns its keys and issues appends back to back without waiting, so
      // completions run concurrently with appends; order per key must still hold.
      std::vector<std::future<append_result>> inflight;
      std::vector<log_record> mine;
      int seq = 0;
      for (int a = 0; a < appends; ++a) {
        std::vector<log_record> batch;
        for (int i = 0; i < 1 + (a + t) % 4; ++i) {
          std::string key = "sb_t" + std::to_string(t) + "_" + std::to_string(i % 3);
          batch.push_back(keyed(key, seq++));
        }
        mine.insert(mine.end(), batch.begin(), batch.end());
        inflight.push_back(log->append(std::move(batch)));
        if (inflight.size() >= 8) {
          failures += !inflight.front().get().ok();
          inflight.erase(inflight.begin());
        }
      }
      for (auto& f : inflight)
        failures += !f.get().ok();
      std::lock_guard l(mu);
      sent.insert(sent.end(), mine.begin(), mine.end());
    });
  for (auto& th : pool)
    th.join();
  BOOST_TEST(failures.load() == 0);
  check_log_holds(*log, sent);
}

BOOST_AUTO_TEST_CASE(every_key_lands_in_the_partition_partition_for_names) {
  place where;
  auto log = where.open();
  std::vector<log_record> batch;
  for (int i = 0; i < 500; ++i)
    batch.push_back({"sb_" + std::to_string(i * 7919), "v"});
  auto r = append_now(*log, batch);
  BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
  std::size_t elsewhere = 0;
  std::set<std::int32_t> used;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    elsewhere += r.positions[i].partition != partition_for(batch[i].key, k_partitions);
    used.insert(r.positions[i].partition);
  }
  BOOST_TEST(elsewhere == 0u);
  BOOST_TEST(used.size() == static_cast<std::size_t>(k_partitions));
}

BOOST_AUTO_TEST_CASE(wait_for_wakes_when_a_record_arrives_and_times_out_otherwise) {
  place where;
  auto log = where.open();
  const std::string key = "sb_waiter";
  const auto p = log->partition_for(key);
  BOOST_TEST(!log->wait_for(p, 0, 200ms));
  std::atomic<bool> appended{false};
  std::thread appender([&] {
    std::this_thread::sleep_for(300ms);
    appended = append_now(*log, {keyed(key, 0)}).ok();
  });
  bool woke = log->wait_for(p, 0, 30s);
  appender.join();
  BOOST_TEST(woke);
  BOOST_TEST(appended.load());
  auto r = log->read(p, 0, 1);
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE(r.records.size() == 1u);
  BOOST_TEST(r.records[0].key == key);
  BOOST_TEST(!log->wait_for(p, 1, 200ms));
}

BOOST_AUTO_TEST_CASE(reads_past_the_end_are_empty_and_bad_arguments_are_errors) {
  place where;
  auto log = where.open();
  auto r = append_now(*log, {keyed("sb_edge", 0)});
  BOOST_REQUIRE(r.ok());
  const auto p = r.positions[0].partition;
  auto past = log->read(p, r.positions[0].offset + 1, 10);
  BOOST_TEST(past.ok());
  BOOST_TEST(past.records.empty());
  auto bad_partition = log->read(k_partitions, 0, 10);
  BOOST_REQUIRE(!bad_partition.ok());
  BOOST_TEST((bad_partition.failure->code == errc::invalid_argument));
  auto bad_offset = log->read(p, -1, 10);
  BOOST_TEST(!bad_offset.ok());
  auto empty_key = append_now(*log, {log_record{"", "no key"}});
  BOOST_REQUIRE(!empty_key.ok());
  BOOST_TEST((empty_key.failure->code == errc::invalid_argument));
  BOOST_TEST(empty_key.positions.empty());
  BOOST_TEST(log->end_offset(p).offset == r.positions[0].offset + 1);
}
