// kafka_log_impl.hpp — the inside of kafka_log, shared by the files that implement it (not
// part of the interface; include only from events/kafka_log*.cpp):
//   kafka_log.cpp         the producer: configuration, appends, delivery reports, a failed
//                         producer's replacement;
//   kafka_log_topic.cpp   the topic: creation with its configs, the check of an existing one;
//   kafka_log_reader.cpp  reads, end offsets and waits, through one consumer.
#pragma once

#include "events/kafka_log.hpp"
#include "events/kafka_topic_config.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace sandboxd::events {

namespace kafka_log_parts {

using clock = std::chrono::steady_clock;

// One append in flight: completes when the last of its records has a delivery report.
struct inflight {
  struct ref {
    inflight* owner;
    std::uint32_t index;
  };
  std::vector<log_record> records; // kept alive until delivered (produced without copy)
  std::unique_ptr<ref[]> refs;
  std::vector<record_position> positions;
  append_callback done;
  std::atomic<std::size_t> remaining{0};
  // Set when a record of the append is stored or may be: a failed append is then
  // maybe_stored.
  std::atomic<bool> some_stored{false};
  std::mutex failure_mu;
  std::optional<error> failure;

  void fail(error e) {
    std::lock_guard l(failure_mu);
    if (!failure)
      failure = std::move(e);
  }
};

// Reader state of one partition: a legacy (simple) consumer started at `next`, with
// fetched records that no read took yet.
struct partition_reader {
  std::mutex mu;
  bool started = false;
  std::int64_t next = 0;
  std::deque<rd_kafka_message_t*> buffered;
};

// How far ahead of its position a reader skips records instead of restarting.
inline constexpr std::int64_t k_skip_limit = 10000;

inline int to_ms(std::chrono::milliseconds d) {
  return static_cast<int>(std::clamp<std::int64_t>(d.count(), 0, 1 << 30));
}

// Whether a broker's answer passes by itself (a leader moving, a topic just created, a
// request that timed out): kafka_log asks again, within a bounded time, instead of
// surfacing it to the caller.
bool transient(rd_kafka_resp_err_t e);

} // namespace kafka_log_parts

struct kafka_log::impl {
  using clock = kafka_log_parts::clock;
  using inflight = kafka_log_parts::inflight;
  using partition_reader = kafka_log_parts::partition_reader;
  kafka_log_options options;
  std::string where; // "kafka log topic T at B"
  // The producer also answers watermark queries: the consumer's connections are often
  // busy with a long fetch, which the broker answers before any later request.
  // Replaced (by the delivery thread, under an exclusive producer_mu) after a fatal error;
  // every other use holds producer_mu shared.
  rd_kafka_t* producer = nullptr;
  std::shared_mutex producer_mu;
  std::atomic<bool> producer_failed{false}; // set by on_error; the delivery thread acts on it
  rd_kafka_t* consumer = nullptr;
  rd_kafka_topic_t* consumer_topic = nullptr;
  std::int32_t partitions = 0;
  std::vector<std::unique_ptr<partition_reader>> readers;

  std::thread delivery;
  std::thread::id delivery_id;
  std::atomic<bool> stopping{false};
  std::atomic<bool> closing{false};
  std::atomic<std::size_t> outstanding{0}; // appends not yet completed

  std::mutex status_mu;
  std::string last_broker_error;
  std::optional<error> fatal; // appends are refused with it while set
  std::uint64_t producers_replaced = 0;

  explicit impl(const kafka_log_options& o);
  ~impl();
  rd_kafka_conf_t* make_conf(bool for_producer);
  kafka_topic_requirements requirements() const {
    return {options.partitions, options.replication_factor, options.min_insync_replicas};
  }
  // Makes sure the topic exists and keeps every event (kafka_log.hpp); throws log_fault.
  void ensure_topic();
  // Asks the brokers to create the topic; returns what went wrong, or "".
  std::string create_topic(int timeout_ms);
  // The topic's configs by name (DescribeConfigs); throws log_fault when they cannot be had.
  std::map<std::string, std::string> describe_topic_configs(int timeout_ms);
  void complete(inflight* a);
  // After a fatal producer error: fails what the old producer still holds (purged, so
  // never reported durable), then puts a new producer in its place. Delivery thread only.
  void replace_producer();
  error broker_error(const std::string& what, const std::string& detail);
  bool position(partition_reader& r, std::int32_t partition, std::int64_t offset,
                std::optional<error>& failure);
  void restart_reader(partition_reader& r, std::int32_t partition);
  // The partition's high watermark. A transient answer (a leader moving, a topic just
  // created, a request timed out: kafka_log_parts::transient) is asked again, with backoff,
  // for up to append_timeout; only a lasting error is returned.
  rd_kafka_resp_err_t high_watermark(std::int32_t partition, std::int64_t& high);
  // The reader's next fetched message: a buffered one, else one from librdkafka.
  rd_kafka_message_t* next_message(partition_reader& r, std::int32_t partition, int timeout_ms);

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque);
  static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque);
};

} // namespace sandboxd::events
