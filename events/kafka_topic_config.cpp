#include "events/kafka_topic_config.hpp"

#include <cstdlib>

namespace sandboxd::events {

namespace {

std::string alter(const std::string& topic, const std::string& setting) {
  return "kafka-configs.sh --alter --entity-type topics --entity-name " + topic + " --add-config " +
         setting;
}

} // namespace

std::optional<std::string> requirements_problem(const kafka_topic_requirements& r) {
  if (r.partitions <= 0)
    return "the partition count must be positive, not " + std::to_string(r.partitions);
  if (r.replication_factor < 1)
    return "the replication factor must be at least 1, not " + std::to_string(r.replication_factor);
  if (r.min_insync_replicas < 1 || r.min_insync_replicas > r.replication_factor)
    return "min_insync_replicas " + std::to_string(r.min_insync_replicas) +
           " must be between 1 and the replication factor " + std::to_string(r.replication_factor) +
           " (above it, no append could ever be acknowledged); on a single broker set both "
           "to 1";
  return std::nullopt;
}

bool single_copy(const kafka_topic_requirements& r) {
  return r.min_insync_replicas < 2;
}

std::vector<std::pair<std::string, std::string>>
topic_configs_for(const kafka_topic_requirements& r) {
  return {{"retention.ms", "-1"},
          {"retention.bytes", "-1"},
          {"cleanup.policy", "delete"},
          {"min.insync.replicas", std::to_string(r.min_insync_replicas)},
          {"unclean.leader.election.enable", "false"}};
}

std::vector<std::string> topic_problems(const std::string& topic, const kafka_topic_requirements& r,
                                        const kafka_topic_state& s) {
  std::vector<std::string> out;
  if (s.partitions != r.partitions)
    out.push_back("it has " + std::to_string(s.partitions) +
                  " partitions, but the log was configured with " + std::to_string(r.partitions) +
                  "; the count cannot change (keys would move between partitions): configure "
                  "the log with " +
                  std::to_string(s.partitions) + " or give it another topic");
  if (s.fewest_replicas < r.replication_factor)
    out.push_back("replication factor " + std::to_string(s.fewest_replicas) +
                  " is below the configured " + std::to_string(r.replication_factor) +
                  " (one broker's loss could lose acknowledged events): add replicas with "
                  "kafka-reassign-partitions.sh, or configure the log's replication_factor to "
                  "match");
  if (!s.configs)
    return out;
  const auto& c = *s.configs;
  auto value = [&](const std::string& name) {
    auto it = c.find(name);
    return it == c.end() ? std::string("(not reported)") : it->second;
  };
  for (const char* name : {"retention.ms", "retention.bytes"}) {
    const std::string v = value(name);
    if (v != "-1")
      out.push_back(std::string(name) + " is " + v +
                    " (the broker would delete events; an event store keeps them forever): " +
                    alter(topic, std::string(name) + "=-1"));
  }
  if (const std::string v = value("cleanup.policy"); v != "delete")
    out.push_back("cleanup.policy is " + v +
                  " (compaction keeps only the last record of each key, so it would delete a "
                  "sandbox's earlier events): " +
                  alter(topic, "cleanup.policy=delete") +
                  " — records already compacted away are lost; restore them before using the "
                  "topic");
  const std::string isr = value("min.insync.replicas");
  char* end = nullptr;
  const long isr_n = std::strtol(isr.c_str(), &end, 10);
  if (end == isr.c_str() || *end != '\0' || isr_n < r.min_insync_replicas)
    out.push_back("min.insync.replicas is " + isr + ", below the configured " +
                  std::to_string(r.min_insync_replicas) +
                  " (acks=all would acknowledge an event fewer brokers have): " +
                  alter(topic, "min.insync.replicas=" + std::to_string(r.min_insync_replicas)));
  if (const std::string v = value("unclean.leader.election.enable"); v != "false")
    out.push_back("unclean.leader.election.enable is " + v +
                  " (an out-of-sync replica could become leader and drop acknowledged "
                  "events): " +
                  alter(topic, "unclean.leader.election.enable=false"));
  return out;
}

} // namespace sandboxd::events
