// kafka_log_impl.hpp — the inside of kafka_log, shared by the files that implement it (not
// part of the interface; include only from events/kafka_log*.cpp):
//   kafka_log.cpp         the producer: configuration, appends, delivery reports, a failed
//                         producer's replacement;
//   kafka_log_topic.cpp   the topic: creation with its configs, the check of an existing one;
//   kafka_log_reader.cpp  reads, end offsets and waits, through one consumer;
//   kafka_log_txn.cpp     fenced appends: the transaction thread.
#pragma once

#include "events/kafka_log.hpp"
#include "events/kafka_topic_config.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
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
  // A fenced append: the transaction thread settles it (kafka_log_txn.cpp); its delivery
  // reports only record where each record went.
  bool in_txn = false;

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

// What kafka_log knows of a partition's end in fenced mode: the last stable offset it last
// saw, and the offset after the last committed record below it (kafka_log.hpp).
struct partition_tail {
  std::mutex mu;
  std::int64_t stable = -1;
  std::int64_t visible = 0;
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
  using partition_tail = kafka_log_parts::partition_tail;
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

  // Fenced appends (kafka_log_txn.cpp). `fenced` is fixed at construction; so is
  // `sparse`: offsets need not be dense (fenced, or options.read_transactions).
  bool fenced = false;
  bool sparse = false;
  // Per partition: after the last record a transaction of this log committed there. Reads
  // wait for the last stable offset to reach it (the markers follow the commit closely).
  std::unique_ptr<std::atomic<std::int64_t>[]> committed_end;
  std::thread txn_thread;
  std::mutex txn_mu;
  std::condition_variable txn_cv;         // appends waiting, or the thread must stop
  std::condition_variable txn_reports_cv; // a transaction's last delivery report came
  std::deque<inflight*> txn_waiting;
  bool txn_stop = false;
  std::vector<std::int64_t> written_end; // per partition, after the last committed record
  std::atomic<std::uint64_t> transactions_committed{0};
  std::atomic<std::uint64_t> appends_fenced{0};
  // The end of each partition as readers see it (fenced mode), and the consumer that finds
  // it (its own, so that it never moves a reader's position).
  std::vector<std::unique_ptr<partition_tail>> tails;
  rd_kafka_t* probe = nullptr;
  rd_kafka_topic_t* probe_topic = nullptr;
  std::mutex probe_mu;

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

  // --- fenced mode (kafka_log_txn.cpp) ---
  void run_transactions();
  // One transaction carrying `batch`; settles every append of it.
  void transact(std::vector<inflight*>& batch);
  // Completes a fenced append with `failure` (none: success) and frees it once every
  // delivery report of its records came.
  void settle(inflight* a, std::optional<error> failure, bool maybe_stored);
  // init_transactions, asked again while it answers a retriable error, until `deadline`.
  bool init_transactions(rd_kafka_t* rk, clock::time_point deadline, std::string& why);
  // A fresh transactional producer in place of a failed one (transaction thread only).
  void replace_transactional_producer();
  // The offset after the last committed record of `partition` below `stable` (its last
  // stable offset), found with the probe consumer and kept in tails[partition].
  offset_result visible_end(std::int32_t partition, std::int64_t stable);
  // The position of `rk`'s reader of `partition`: past the last record or transaction
  // marker it consumed (RD_KAFKA_OFFSET_INVALID before any).
  std::int64_t consumed_position(rd_kafka_t* rk, std::int32_t partition);

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque);
  static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque);
};

} // namespace sandboxd::events
