// kafka_log.hpp — the event log on Apache Kafka, through librdkafka.
//
// One topic holds the log; its partitions are the log's partitions. Appends go through an
// idempotent producer (enable.idempotence=true, acks=all, partitioner murmur2_random, so
// partition_for(key) names the partition); a delivery report per record completes the
// append once every record of the batch is acknowledged. Reads assign a partition at an
// explicit offset (no consumer group: callers keep their own offsets, projections in
// PostgreSQL).
//
// Guarantees, beyond those of event_log:
// - Brokers unreachable: an append fails once `append_timeout` has passed (librdkafka's
//   message.timeout.ms), with an error naming the brokers; it never hangs and is never
//   reported as durable.
// - Completions run on the log's delivery thread.
// - A fatal producer error (idempotence broken; librdkafka 2.0 can end an idempotent
//   producer so after a broker restart): the appends the producer still held fail (not
//   durable), appends are refused with errc::unavailable while the delivery thread puts a
//   new producer in its place, and are taken again once it is there (within about a
//   second). The log needs no reopening.
// - Opening creates the topic with `partitions` partitions through the admin API when it
//   is missing, and refuses a topic whose partition count differs (log_fault).
#pragma once

#include "events/event_log.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::events {

struct kafka_log_options {
  std::string bootstrap_servers; // "host:port,host:port"
  std::string topic = "sandboxd-events";
  std::int32_t partitions = 8;
  // For a topic this log creates; -1 takes the broker's default.
  std::int16_t replication_factor = -1;
  // How long an append may wait for the brokers before it fails.
  std::chrono::milliseconds append_timeout{30000};
  // How long opening may wait for the brokers (metadata, topic creation).
  std::chrono::milliseconds open_timeout{30000};
  // How long the producer waits to fill a batch before sending it.
  std::chrono::milliseconds linger{2};
  // How long the broker may hold a reader's fetch when no record is there (fetch.wait.max.ms).
  // A real broker answers as soon as a record arrives; librdkafka's mock cluster always
  // waits this long, so tests against it shorten it.
  std::chrono::milliseconds fetch_wait{100};
  // Extra librdkafka properties, applied to producer and consumer alike (security etc.).
  std::vector<std::pair<std::string, std::string>> config;
};

class kafka_log final : public event_log {
public:
  // Connects and makes sure the topic exists. Throws log_fault when the brokers cannot be
  // reached within open_timeout or the topic does not fit.
  explicit kafka_log(const kafka_log_options& options);
  // Waits up to append_timeout for appends in flight; those still unacknowledged then
  // fail. No other thread may be inside a member function.
  ~kafka_log() override;
  kafka_log(const kafka_log&) = delete;
  kafka_log& operator=(const kafka_log&) = delete;

  using event_log::append;
  std::int32_t partitions() const override;
  void append(std::vector<log_record> batch, append_callback done) override;
  read_result read(std::int32_t partition, std::int64_t from, std::size_t max) override;
  offset_result end_offset(std::int32_t partition) override;
  bool wait_for(std::int32_t partition, std::int64_t offset,
                std::chrono::milliseconds timeout) override;
  std::string describe() const override;

  // For tests: fails the producer as a fatal idempotence error does
  // (rd_kafka_test_fatal_error).
  void inject_fatal_producer_error(const std::string& reason);
  // How many times a failed producer was replaced.
  std::uint64_t producers_replaced() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::events
