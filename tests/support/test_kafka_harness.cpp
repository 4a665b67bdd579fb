// The Kafka protocol harness: the real broker of the ctest fixture and librdkafka's
// mock cluster both keep every key in one partition, in order, with nothing missing
// or duplicated — and the mock cluster loses nothing when a broker goes down.
#define BOOST_TEST_MODULE kafka_harness
#include <boost/test/unit_test.hpp>

#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_mock.hpp"
#include "tests/support/kafka_records.hpp"

#include <chrono>
#include <map>
#include <set>
#include <thread>

using namespace sandboxd::test;
using namespace std::chrono_literals;

namespace {

// 10,000 records over 100 keys; the value carries the key's own sequence number.
std::vector<kafka_record> keyed_records(size_t n = 10000, size_t keys = 100) {
  std::vector<kafka_record> out;
  std::vector<size_t> seq(keys, 0);
  for (size_t i = 0; i < n; ++i) {
    size_t k = (i * 7919) % keys;
    out.push_back({"sb_" + std::to_string(k), std::to_string(seq[k]++), -1, -1});
  }
  return out;
}

// Every record arrived exactly once; each key's records share one partition and
// arrive in the order produced.
void check_exactly_once_in_order(const std::vector<kafka_record>& sent,
                                 const std::vector<kafka_record>& got) {
  BOOST_TEST(got.size() == sent.size());
  std::set<std::pair<std::string, std::string>> seen;
  std::map<std::string, int32_t> partition_of;
  std::map<std::string, long> last_seq;
  size_t duplicates = 0, partition_mixups = 0, out_of_order = 0;
  for (const auto& r : got) {
    if (!seen.insert({r.key, r.value}).second)
      ++duplicates;
    auto [it, fresh] = partition_of.emplace(r.key, r.partition);
    if (!fresh && it->second != r.partition)
      ++partition_mixups;
    long s = std::stol(r.value);
    auto [lit, lfresh] = last_seq.emplace(r.key, s);
    if (!lfresh) {
      if (s != lit->second + 1)
        ++out_of_order;
      lit->second = s;
    } else if (s != 0) {
      ++out_of_order;
    }
  }
  BOOST_TEST(duplicates == 0u);
  BOOST_TEST(partition_mixups == 0u);
  BOOST_TEST(out_of_order == 0u);
  size_t missing = 0;
  for (const auto& r : sent)
    missing += seen.count({r.key, r.value}) == 0;
  BOOST_TEST(missing == 0u);
}

} // namespace

BOOST_AUTO_TEST_CASE(real_broker_keeps_keys_in_one_partition_in_order) {
  auto bootstrap = shared_kafka_bootstrap();
  create_topic(bootstrap, "harness-order", 8);
  auto sent = keyed_records();
  auto delivered = produce_all(bootstrap, "harness-order", sent);
  BOOST_TEST(delivered.size() == sent.size());
  auto got = consume_group(bootstrap, "harness-order", sent.size(), 20s);
  check_exactly_once_in_order(sent, got);
  std::set<int32_t> partitions;
  for (const auto& r : got)
    partitions.insert(r.partition);
  BOOST_TEST(partitions.size() == 8u); // 100 keys spread over all 8 partitions
}

BOOST_AUTO_TEST_CASE(mock_cluster_keeps_keys_in_one_partition_in_order) {
  kafka_mock_cluster mock;
  mock.create_topic("harness-order", 8);
  auto sent = keyed_records();
  auto delivered = produce_all(mock.bootstrap(), "harness-order", sent);
  BOOST_TEST(delivered.size() == sent.size());
  auto got = consume_group(mock.bootstrap(), "harness-order", sent.size(), 20s);
  check_exactly_once_in_order(sent, got);
}

BOOST_AUTO_TEST_CASE(mock_broker_down_during_production_loses_nothing) {
  kafka_mock_cluster mock;
  mock.create_topic("harness-fault", 8);
  for (int p = 0; p < 8; ++p)
    mock.set_leader("harness-fault", p, 1 + p % 3);
  auto sent = keyed_records();
  bool took_down = false;
  produce_options opts;
  opts.every = 1000;
  opts.progress = [&](size_t produced) {
    if (produced == 3000) {
      mock.broker_down(2); // leader of partitions 1 and 4 and 7
      took_down = true;
    } else if (produced == 7000) {
      std::this_thread::sleep_for(500ms);
      mock.broker_up(2);
    }
  };
  auto delivered = produce_all(mock.bootstrap(), "harness-fault", sent, opts);
  BOOST_TEST(took_down);
  BOOST_TEST(delivered.size() == sent.size());
  auto got = consume_group(mock.bootstrap(), "harness-fault", sent.size(), 30s);
  check_exactly_once_in_order(sent, got);
}
