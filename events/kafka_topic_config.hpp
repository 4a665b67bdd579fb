// kafka_topic_config.hpp — what the Kafka topic of the event log must be so that it keeps
// every event: the settings kafka_log gives a topic it creates, and the check of an
// existing topic against the log's options. Pure: nothing here talks to a broker.
//
// A topic keeps every event when no record is ever deleted (retention.ms and
// retention.bytes -1, cleanup.policy exactly "delete": compaction would keep only the last
// record of each sandbox), no acknowledged record can be lost with one broker
// (replication factor and min.insync.replicas at least the configured ones, which acks=all
// needs before it acknowledges), and no out-of-sync replica can become leader
// (unclean.leader.election.enable false).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::events {

// What the log is configured to need (kafka_log_options).
struct kafka_topic_requirements {
  std::int32_t partitions = 0;
  std::int16_t replication_factor = 0;
  std::int32_t min_insync_replicas = 0;
};

// What a broker says about an existing topic.
struct kafka_topic_state {
  std::int32_t partitions = 0;
  std::int32_t fewest_replicas = 0; // the smallest replica count of any partition
  // The topic's configs by name (DescribeConfigs); absent when they were not described.
  std::optional<std::map<std::string, std::string>> configs;
};

// A problem with the requirements themselves (min.insync.replicas above the replication
// factor: no append could be acknowledged), or nullopt.
std::optional<std::string> requirements_problem(const kafka_topic_requirements& r);

// Whether the requirements keep an acknowledged record on one broker only (a warning).
bool single_copy(const kafka_topic_requirements& r);

// The topic configs a topic created for the log gets, in the order they are set.
std::vector<std::pair<std::string, std::string>>
topic_configs_for(const kafka_topic_requirements& r);

// One sentence per setting of `topic` that would delete or under-replicate events: each
// names the setting, its value, what it would do, and how to fix it (or to point the log
// at another topic). Empty when the topic keeps every event.
std::vector<std::string> topic_problems(const std::string& topic, const kafka_topic_requirements& r,
                                        const kafka_topic_state& s);

} // namespace sandboxd::events
