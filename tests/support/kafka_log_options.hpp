// kafka_log options for the two kinds of test cluster: the real single broker
// (scripts/kafka-broker), which can keep one copy of a record only, and librdkafka's mock
// cluster, which cannot describe topic configs. Header-only: tests that use it link
// sandboxd_events anyway.
#pragma once

#include "events/kafka_log.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace sandboxd::test {

// A log on one real broker: replication factor 1 and min.insync.replicas 1 (the
// single-broker warning goes nowhere: every test on that broker would print it).
inline events::kafka_log_options
single_broker_log(const std::string& bootstrap, const std::string& topic, std::int32_t partitions) {
  events::kafka_log_options o;
  o.bootstrap_servers = bootstrap;
  o.topic = topic;
  o.partitions = partitions;
  o.replication_factor = 1;
  o.min_insync_replicas = 1;
  o.warn = [](const std::string&) {};
  return o;
}

// A log on librdkafka's mock cluster: its topics are made with kafka_mock_cluster's
// create_topic (replication factor 3 by default), their configs cannot be described, and
// the mock holds every empty fetch for fetch.wait.max.ms even when records arrive.
inline events::kafka_log_options
mock_cluster_log(const std::string& bootstrap, const std::string& topic, std::int32_t partitions) {
  events::kafka_log_options o;
  o.bootstrap_servers = bootstrap;
  o.topic = topic;
  o.partitions = partitions;
  o.check_topic_configs = false;
  o.fetch_wait = std::chrono::milliseconds(5);
  return o;
}

} // namespace sandboxd::test
