// The rules that decide whether a Kafka topic keeps every event (events/kafka_topic_config):
// each setting that would delete or under-replicate events is named on its own, with its
// value and the fix; a topic that keeps everything has no problem; a new topic gets the
// settings that keep everything. The same rules against a real broker are
// test_kafka_log_topic.
#define BOOST_TEST_MODULE kafka_topic_config
#include <boost/test/unit_test.hpp>

#include "events/kafka_topic_config.hpp"

#include <algorithm>

using namespace sandboxd::events;

namespace {

const kafka_topic_requirements k_cluster{8, 3, 2};

// A topic that keeps every event under k_cluster.
kafka_topic_state keeping() {
  kafka_topic_state s;
  s.partitions = 8;
  s.fewest_replicas = 3;
  s.configs = std::map<std::string, std::string>{{"retention.ms", "-1"},
                                                 {"retention.bytes", "-1"},
                                                 {"cleanup.policy", "delete"},
                                                 {"min.insync.replicas", "2"},
                                                 {"unclean.leader.election.enable", "false"}};
  return s;
}

// The one problem `s` has; fails the test when it has none or several.
std::string only_problem(const kafka_topic_state& s) {
  auto problems = topic_problems("events", k_cluster, s);
  BOOST_REQUIRE_EQUAL(problems.size(), 1u);
  return problems[0];
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_topic_that_keeps_every_event_has_no_problem) {
  BOOST_TEST(topic_problems("events", k_cluster, keeping()).empty());
  auto more = keeping();
  more.fewest_replicas = 5;
  (*more.configs)["min.insync.replicas"] = "3";
  BOOST_TEST(topic_problems("events", k_cluster, more).empty());
}

BOOST_AUTO_TEST_CASE(each_setting_that_deletes_or_under_replicates_events_is_named) {
  auto s = keeping();
  (*s.configs)["retention.ms"] = "604800000";
  auto p = only_problem(s);
  BOOST_TEST(has(p, "retention.ms is 604800000"), p);
  BOOST_TEST(has(p, "--entity-name events --add-config retention.ms=-1"), p);

  s = keeping();
  (*s.configs)["retention.bytes"] = "1073741824";
  p = only_problem(s);
  BOOST_TEST(has(p, "retention.bytes is 1073741824"), p);

  for (const char* policy : {"compact", "compact,delete", "delete,compact"}) {
    s = keeping();
    (*s.configs)["cleanup.policy"] = policy;
    p = only_problem(s);
    BOOST_TEST(has(p, std::string("cleanup.policy is ") + policy), p);
    BOOST_TEST(has(p, "--add-config cleanup.policy=delete"), p);
  }

  s = keeping();
  (*s.configs)["min.insync.replicas"] = "1";
  p = only_problem(s);
  BOOST_TEST(has(p, "min.insync.replicas is 1, below the configured 2"), p);

  s = keeping();
  s.fewest_replicas = 2;
  p = only_problem(s);
  BOOST_TEST(has(p, "replication factor 2 is below the configured 3"), p);

  s = keeping();
  (*s.configs)["unclean.leader.election.enable"] = "true";
  p = only_problem(s);
  BOOST_TEST(has(p, "unclean.leader.election.enable is true"), p);

  s = keeping();
  s.partitions = 16;
  p = only_problem(s);
  BOOST_TEST(has(p, "it has 16 partitions, but the log was configured with 8"), p);
}

BOOST_AUTO_TEST_CASE(a_setting_the_broker_does_not_report_is_a_problem_not_a_pass) {
  auto s = keeping();
  s.configs->erase("retention.ms");
  auto p = only_problem(s);
  BOOST_TEST(has(p, "retention.ms is (not reported)"), p);
}

BOOST_AUTO_TEST_CASE(broker_defaults_are_refused_with_every_problem_at_once) {
  kafka_topic_state s; // what a topic created with Kafka's defaults on one broker looks like
  s.partitions = 8;
  s.fewest_replicas = 1;
  s.configs = std::map<std::string, std::string>{{"retention.ms", "604800000"},
                                                 {"retention.bytes", "-1"},
                                                 {"cleanup.policy", "delete"},
                                                 {"min.insync.replicas", "1"},
                                                 {"unclean.leader.election.enable", "false"}};
  auto problems = topic_problems("events", k_cluster, s);
  BOOST_TEST(problems.size() == 3u);
}

BOOST_AUTO_TEST_CASE(without_described_configs_only_partitions_and_replicas_are_checked) {
  auto s = keeping();
  s.configs.reset();
  BOOST_TEST(topic_problems("events", k_cluster, s).empty());
  s.fewest_replicas = 1;
  BOOST_TEST(topic_problems("events", k_cluster, s).size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_new_topic_gets_the_settings_that_keep_every_event) {
  auto configs = topic_configs_for(k_cluster);
  std::map<std::string, std::string> by_name(configs.begin(), configs.end());
  BOOST_TEST(by_name["retention.ms"] == "-1");
  BOOST_TEST(by_name["retention.bytes"] == "-1");
  BOOST_TEST(by_name["cleanup.policy"] == "delete");
  BOOST_TEST(by_name["min.insync.replicas"] == "2");
  BOOST_TEST(by_name["unclean.leader.election.enable"] == "false");
  // What a new topic gets passes the check of an existing one.
  kafka_topic_state s;
  s.partitions = 8;
  s.fewest_replicas = 3;
  s.configs = by_name;
  BOOST_TEST(topic_problems("events", k_cluster, s).empty());
}

BOOST_AUTO_TEST_CASE(requirements_that_could_never_acknowledge_are_refused) {
  BOOST_TEST(!requirements_problem(k_cluster));
  BOOST_TEST(!requirements_problem({8, 1, 1}));
  auto p = requirements_problem({8, 1, 2});
  BOOST_REQUIRE(p.has_value());
  BOOST_TEST(has(*p, "min_insync_replicas 2 must be between 1 and the replication factor 1"), *p);
  BOOST_TEST(requirements_problem({8, 3, 0}).has_value());
  BOOST_TEST(requirements_problem({8, 0, 1}).has_value());
  BOOST_TEST(requirements_problem({0, 3, 2}).has_value());
  BOOST_TEST(single_copy({8, 1, 1}));
  BOOST_TEST(single_copy({8, 3, 1}));
  BOOST_TEST(!single_copy(k_cluster));
}
