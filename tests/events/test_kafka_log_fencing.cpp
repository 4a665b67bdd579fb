// Fenced appends of kafka_log (kafka_log.hpp, "Fenced appends"; docs/cluster.md) on the real
// broker: an append whose transaction commits with a stale or absent consumer-group
// membership is refused as "not the owner", is not maybe-stored, and no reader of the log
// returns its records — although they are in the partition, as a read_uncommitted consumer
// shows. Around them, the log's end and its reads skip the commit markers and aborted records.
#define BOOST_TEST_MODULE kafka_log_fencing
#include <boost/test/unit_test.hpp>

#include "base/not_owner.hpp"
#include "events/kafka_log.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_group.hpp"
#include "tests/support/kafka_log_options.hpp"

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

using namespace sandboxd;
using namespace sandboxd::events;
using namespace std::chrono_literals;

namespace {

constexpr std::int32_t k_partitions = 4;

std::string fresh_topic() {
  static std::atomic<int> n{0};
  return "fencing-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// A topic (made by an idempotent log, with the configs kafka_log requires) and a member of
// its owners' group.
struct fenced_topic {
  std::string bootstrap = test::shared_kafka_bootstrap();
  std::string topic = fresh_topic();
  std::string group = topic + ".owners";
  std::unique_ptr<test::kafka_group_member> member;

  fenced_topic() {
    { kafka_log made(test::single_broker_log(bootstrap, topic, k_partitions)); }
    member = std::make_unique<test::kafka_group_member>(bootstrap, group, topic, "node-a");
    BOOST_REQUIRE_MESSAGE(member->wait_generation_after(0, 60s),
                          "the member never got an assignment");
  }

  kafka_log_options options(const std::string& writer,
                            std::function<std::string()> metadata) const {
    auto o = test::single_broker_log(bootstrap, topic, k_partitions);
    o.transactional_id = topic + "." + writer;
    o.writer = writer;
    o.group_metadata = std::move(metadata);
    o.append_timeout = 20s;
    return o;
  }
};

append_result append_now(event_log& log, std::vector<log_record> batch) {
  auto f = log.append(std::move(batch));
  BOOST_REQUIRE(f.wait_for(60s) == std::future_status::ready);
  return f.get();
}

std::vector<stored_record> read_partition(event_log& log, std::int32_t p) {
  std::vector<stored_record> out;
  const auto end = log.end_offset(p);
  BOOST_REQUIRE_MESSAGE(end.ok(), end.failure->message);
  for (std::int64_t at = 0; at < end.offset;) {
    auto r = log.read(p, at, 100);
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    BOOST_REQUIRE(!r.records.empty());
    at = r.records.back().offset + 1;
    for (auto& rec : r.records)
      out.push_back(std::move(rec));
  }
  return out;
}

// The values of every record of `topic` as a read_uncommitted consumer sees them (aborted
// records included), and the writer header of each.
std::multiset<std::string> read_uncommitted(const std::string& bootstrap, const std::string& topic,
                                            std::int32_t partitions,
                                            std::multiset<std::string>* writers = nullptr) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "isolation.level", "read_uncommitted", err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", (topic + ".uncommitted").c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  BOOST_REQUIRE(rk != nullptr);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (std::int32_t p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::multiset<std::string> values;
  int at_end = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (at_end < partitions && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_end;
    } else if (!m->err) {
      values.insert(std::string(static_cast<const char*>(m->payload), m->len));
      rd_kafka_headers_t* h = nullptr;
      const void* v = nullptr;
      size_t n = 0;
      if (writers && rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          rd_kafka_header_get_last(h, "sandboxd-writer", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR)
        writers->insert(std::string(static_cast<const char*>(v), n));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  BOOST_REQUIRE_MESSAGE(at_end == partitions,
                        "the read_uncommitted consumer did not reach the end");
  return values;
}

} // namespace

BOOST_AUTO_TEST_CASE(an_append_with_a_stale_generation_is_refused_and_never_read) {
  fenced_topic t;
  // Node a's membership as it was; then node b joins, the group rebalances and a moves on to
  // the next generation. A writer still holding the old generation is a zombie.
  const std::string stale = t.member->metadata();
  const auto seen = t.member->generations();
  test::kafka_group_member b(t.bootstrap, t.group, t.topic, "node-b");
  BOOST_REQUIRE(b.wait_generation_after(0, 60s));
  BOOST_REQUIRE(t.member->wait_generation_after(seen, 60s));
  BOOST_REQUIRE(t.member->metadata() != stale);

  kafka_log live(t.options("live", [m = t.member.get()] { return m->metadata(); }));
  kafka_log zombie(t.options("zombie", [stale] { return stale; }));

  const std::string key = "sb-fenced";
  const auto p = live.partition_for(key);
  auto first = append_now(live, {{key, "before"}});
  BOOST_REQUIRE_MESSAGE(first.ok(), first.failure->message);
  const auto end_before = live.end_offset(p);
  BOOST_REQUIRE(end_before.ok());
  BOOST_TEST(end_before.offset == first.positions[0].offset + 1);

  auto refused = append_now(zombie, {{key, "zombie-1"}, {"sb-other", "zombie-2"}});
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST((refused.failure->code == errc::unavailable));
  BOOST_TEST(is_not_owner(*refused.failure), refused.failure->message);
  BOOST_TEST(!refused.maybe_stored);
  BOOST_TEST(refused.positions.empty());
  BOOST_TEST(zombie.appends_fenced() == 1u);

  // The aborted records and their marker sit at the end of the partition: its end as
  // readers see it did not move, and a read from there finds nothing.
  auto end_after = live.end_offset(p);
  BOOST_REQUIRE(end_after.ok());
  BOOST_TEST(end_after.offset == end_before.offset);
  auto nothing = live.read(p, end_after.offset, 10);
  BOOST_REQUIRE(nothing.ok());
  BOOST_TEST(nothing.records.empty());

  auto after = append_now(live, {{key, "after"}});
  BOOST_REQUIRE_MESSAGE(after.ok(), after.failure->message);
  BOOST_TEST(after.positions[0].offset > end_after.offset); // past the aborted records
  std::vector<std::string> seen_values;
  for (const auto& r : read_partition(live, p))
    seen_values.push_back(r.value);
  BOOST_TEST((seen_values == std::vector<std::string>{"before", "after"}));
  // A reader that starts at the old end skips the aborted records and the markers.
  auto tail = live.read(p, end_after.offset, 10);
  BOOST_REQUIRE(tail.ok());
  BOOST_REQUIRE(tail.records.size() == 1u);
  BOOST_TEST(tail.records[0].value == "after");
  // A fresh log (every reader reads committed records only) sees the same.
  auto ro = test::single_broker_log(t.bootstrap, t.topic, k_partitions);
  ro.read_transactions = true;
  kafka_log reader(ro);
  std::set<std::string> all;
  for (std::int32_t q = 0; q < k_partitions; ++q)
    for (const auto& r : read_partition(reader, q))
      all.insert(r.value);
  BOOST_TEST((all == std::set<std::string>{"before", "after"}));

  // The zombie's records are in the partitions all the same: only read_committed hides them.
  std::multiset<std::string> writers;
  auto raw = read_uncommitted(t.bootstrap, t.topic, k_partitions, &writers);
  BOOST_TEST(raw.count("zombie-1") == 1u);
  BOOST_TEST(raw.count("zombie-2") == 1u);
  BOOST_TEST(writers.count("zombie") == 2u);
  BOOST_TEST(writers.count("live") == 2u);
}

BOOST_AUTO_TEST_CASE(an_append_of_a_member_that_left_is_refused) {
  fenced_topic t;
  test::kafka_group_member b(t.bootstrap, t.group, t.topic, "node-b");
  BOOST_REQUIRE(b.wait_generation_after(0, 60s));
  const auto seen = t.member->generations();
  BOOST_REQUIRE(t.member->wait_generation_after(seen == 1 ? 1 : seen - 1, 60s));
  // Node a leaves the group that b stays in; what a held no longer commits anything.
  const std::string gone = t.member->metadata();
  const auto b_seen = b.generations();
  t.member->leave();
  BOOST_REQUIRE(b.wait_generation_after(b_seen, 60s));
  kafka_log log(t.options("left", [gone] { return gone; }));
  auto r = append_now(log, {{"sb-left", "x"}});
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(is_not_owner(*r.failure), r.failure->message);
  BOOST_TEST(!r.maybe_stored);
  auto ro = test::single_broker_log(t.bootstrap, t.topic, k_partitions);
  ro.read_transactions = true;
  kafka_log reader(ro);
  BOOST_TEST(read_partition(reader, reader.partition_for("sb-left")).empty());
}

BOOST_AUTO_TEST_CASE(an_append_without_membership_is_refused_before_anything_is_sent) {
  fenced_topic t;
  kafka_log log(t.options("none", [] { return std::string(); }));
  auto r = append_now(log, {{"sb-none", "x"}});
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(is_not_owner(*r.failure), r.failure->message);
  BOOST_TEST(!r.maybe_stored);
  BOOST_TEST(read_uncommitted(t.bootstrap, t.topic, k_partitions).empty());
}

BOOST_AUTO_TEST_CASE(appends_that_wait_share_one_transaction) {
  fenced_topic t;
  kafka_log log(t.options("batched", [m = t.member.get()] { return m->metadata(); }));
  std::vector<std::future<append_result>> pending;
  for (int i = 0; i < 400; ++i)
    pending.push_back(log.append({{"sb-" + std::to_string(i % 37), "v" + std::to_string(i)}}));
  std::size_t failed = 0;
  for (auto& f : pending)
    failed += !f.get().ok();
  BOOST_TEST(failed == 0u);
  // One transaction per append would be 400; waiting appends go out together.
  BOOST_TEST(log.transactions_committed() < 200u);
  std::size_t read = 0;
  for (std::int32_t p = 0; p < k_partitions; ++p)
    read += read_partition(log, p).size();
  BOOST_TEST(read == 400u);
}
