// kafka_log and its topic on a real broker (the ctest fixture `kafka_broker`): a topic the
// log creates keeps every event (as the broker itself describes it afterwards), and an
// existing topic that would delete or under-replicate events is refused at open with an
// error naming each such setting — never used.
#define BOOST_TEST_MODULE kafka_log_topic
#include <boost/test/unit_test.hpp>

#include "events/kafka_log.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_log_options.hpp"

#include <atomic>
#include <unistd.h>

using namespace sandboxd::events;
using sandboxd::test::shared_kafka_bootstrap;

namespace {

std::string fresh_topic(const std::string& tag) {
  static std::atomic<int> n{0};
  return "topic-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// What opening a log on `topic` with `o` threw ("" when it opened).
std::string open_fault(const kafka_log_options& o) {
  try {
    kafka_log log(o);
  } catch (const log_fault& f) {
    return f.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The settings a topic that keeps every event has on this single broker.
const std::vector<std::pair<std::string, std::string>> k_keeping = {{"retention.ms", "-1"},
                                                                    {"retention.bytes", "-1"},
                                                                    {"cleanup.policy", "delete"},
                                                                    {"min.insync.replicas", "1"}};

} // namespace

BOOST_AUTO_TEST_CASE(a_topic_the_log_creates_keeps_every_event_as_the_broker_describes_it) {
  const auto bootstrap = shared_kafka_bootstrap();
  const auto topic = fresh_topic("created");
  auto o = sandboxd::test::single_broker_log(bootstrap, topic, 4);
  std::vector<std::string> warnings;
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  {
    kafka_log log(o);
    BOOST_TEST(log.partitions() == 4);
    BOOST_TEST(log.append({{"sb_1", "kept"}}).get().ok());
  }
  auto configs = sandboxd::test::topic_configs(bootstrap, topic);
  BOOST_TEST(configs["retention.ms"] == "-1");
  BOOST_TEST(configs["retention.bytes"] == "-1");
  BOOST_TEST(configs["cleanup.policy"] == "delete");
  BOOST_TEST(configs["min.insync.replicas"] == "1");
  BOOST_TEST(configs["unclean.leader.election.enable"] == "false");
  // One broker keeps one copy: the log says so.
  BOOST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(has(warnings[0], "on one broker only"), warnings[0]);
  // Opened again, the topic it made passes its own check.
  warnings.clear();
  BOOST_TEST(open_fault(o) == "");
}

BOOST_AUTO_TEST_CASE(a_topic_with_the_brokers_default_retention_is_refused_naming_it) {
  const auto bootstrap = shared_kafka_bootstrap();
  const auto topic = fresh_topic("default");
  sandboxd::test::create_topic(bootstrap, topic, 4, 1); // the broker's defaults: 7 days
  const auto fault = open_fault(sandboxd::test::single_broker_log(bootstrap, topic, 4));
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(has(fault, "would not keep every event"), fault);
  BOOST_TEST(has(fault, "retention.ms is 604800000"), fault);
  BOOST_TEST(has(fault, "--entity-name " + topic + " --add-config retention.ms=-1"), fault);
  BOOST_TEST(!has(fault, "cleanup.policy"), fault);
  BOOST_TEST(!has(fault, "replication factor"), fault);
}

BOOST_AUTO_TEST_CASE(a_compacted_topic_is_refused_naming_its_cleanup_policy) {
  const auto bootstrap = shared_kafka_bootstrap();
  const auto topic = fresh_topic("compact");
  auto configs = k_keeping;
  configs[2] = {"cleanup.policy", "compact"};
  sandboxd::test::create_topic(bootstrap, topic, 4, 1, configs);
  const auto fault = open_fault(sandboxd::test::single_broker_log(bootstrap, topic, 4));
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(has(fault, "cleanup.policy is compact"), fault);
  BOOST_TEST(!has(fault, "retention.ms"), fault);
}

BOOST_AUTO_TEST_CASE(fewer_replicas_and_a_lower_min_isr_than_configured_are_refused) {
  const auto bootstrap = shared_kafka_bootstrap();
  const auto topic = fresh_topic("replicas");
  sandboxd::test::create_topic(bootstrap, topic, 4, 1, k_keeping);
  // The log configured for a 3-broker cluster finds a topic with one copy.
  auto o = sandboxd::test::single_broker_log(bootstrap, topic, 4);
  o.replication_factor = 3;
  o.min_insync_replicas = 2;
  const auto fault = open_fault(o);
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(has(fault, "replication factor 1 is below the configured 3"), fault);
  BOOST_TEST(has(fault, "min.insync.replicas is 1, below the configured 2"), fault);
  BOOST_TEST(!has(fault, "retention"), fault);
  // The same topic with the single-broker settings opens.
  BOOST_TEST(open_fault(sandboxd::test::single_broker_log(bootstrap, topic, 4)) == "");
}

BOOST_AUTO_TEST_CASE(a_topic_with_another_partition_count_is_refused) {
  const auto bootstrap = shared_kafka_bootstrap();
  const auto topic = fresh_topic("partitions");
  sandboxd::test::create_topic(bootstrap, topic, 2, 1, k_keeping);
  const auto fault = open_fault(sandboxd::test::single_broker_log(bootstrap, topic, 4));
  BOOST_TEST(has(fault, "it has 2 partitions, but the log was configured with 4"), fault);
}

BOOST_AUTO_TEST_CASE(a_min_isr_above_the_replication_factor_is_refused_before_any_topic_is_made) {
  const auto bootstrap = shared_kafka_bootstrap();
  const auto topic = fresh_topic("impossible");
  auto o = sandboxd::test::single_broker_log(bootstrap, topic, 4);
  o.min_insync_replicas = 2;
  const auto fault = open_fault(o);
  BOOST_TEST(has(fault, "min_insync_replicas 2 must be between 1 and the replication factor 1"),
             fault);
  // No topic was made with settings that could never acknowledge an append.
  BOOST_CHECK_THROW(sandboxd::test::topic_configs(bootstrap, topic), std::runtime_error);
}
