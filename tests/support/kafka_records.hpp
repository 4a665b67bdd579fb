// Plain librdkafka producer and consumer loops shared by the Kafka harness tests:
// keyed records out, every record back with its partition and offset.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sandboxd::test {

struct kafka_record {
  std::string key;
  std::string value;
  int32_t partition = -1;
  int64_t offset = -1;
};

struct produce_options {
  // Called after every `every` records have been queued (fault injection hook).
  std::function<void(size_t produced)> progress;
  size_t every = 1000;
};

// Produces the records with an idempotent, acks=all producer and the Java client's
// partitioner (murmur2_random), and returns them with the partition and offset of
// each delivery report, in delivery order. Throws if any delivery fails.
std::vector<kafka_record> produce_all(const std::string& bootstrap, const std::string& topic,
                                      const std::vector<kafka_record>& records,
                                      const produce_options& options = {});

// Consumes `topic` from the beginning with a fresh consumer group until `count`
// records arrived (then for `linger` more, so duplicates show) or `timeout` passed,
// and returns what arrived in arrival order.
std::vector<kafka_record>
consume_group(const std::string& bootstrap, const std::string& topic, size_t count,
              std::chrono::seconds timeout,
              std::chrono::milliseconds linger = std::chrono::milliseconds(1000));

} // namespace sandboxd::test
