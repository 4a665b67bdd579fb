// kafka_log.hpp — the event log on Apache Kafka, through librdkafka.
//
// One topic holds the log; its partitions are the log's partitions. Appends go through an
// idempotent producer (enable.idempotence=true, acks=all, partitioner murmur2_random, so
// partition_for(key) names the partition); a delivery report per record completes the
// append once every record of the batch has one. Reads assign a partition at an explicit
// offset (no consumer group: callers keep their own offsets, projections in PostgreSQL).
//
// Guarantees, beyond those of event_log:
// - What an append's outcome says, record by record (rd_kafka_message_status of each
//   delivery report):
//     PERSISTED with a known offset (with or without an error)  -> stored at that offset;
//     PERSISTED without an offset, or POSSIBLY_PERSISTED         -> fate unknown;
//     NOT_PERSISTED                                               -> not stored.
//   The append succeeds when every record is stored. Otherwise it fails, with
//   `maybe_stored` set when any record is stored or of unknown fate (a delivery timeout
//   after the request was sent, records purged in flight after a fatal producer error or
//   at close), and clear only when no record can be in the log.
// - Brokers unreachable: an append fails once `append_timeout` has passed (librdkafka's
//   message.timeout.ms), with an error naming the brokers; it never hangs and is never
//   reported as durable.
// - Completions run on the log's delivery thread.
// - A transient broker answer to a read, end_offset or wait_for (a leader moving, a topic
//   just created, a request that timed out) is asked again inside the log, with backoff,
//   for up to `append_timeout`; only a lasting one reaches the caller.
// - A fatal producer error (idempotence broken; librdkafka 2.0 can end an idempotent
//   producer so after a broker restart): the appends the producer still held fail (those
//   sent and not acknowledged with `maybe_stored`), appends are refused with
//   errc::unavailable while the delivery thread puts a new producer in its place, and are
//   taken again once it is there (within about a second). The log needs no reopening.
// - The topic keeps every event: opening creates a missing topic with `partitions`
//   partitions, the configured replication factor and min.insync.replicas,
//   retention.ms=-1, retention.bytes=-1, cleanup.policy=delete (never compacted) and
//   unclean.leader.election.enable=false. An existing topic is described
//   (DescribeConfigs) and refused with a log_fault naming each setting that would delete
//   or under-replicate events and what to do: a partition count other than configured,
//   fewer replicas or a lower min.insync.replicas than configured, a retention other than
//   -1, compaction, unclean leader election.
//
// Fenced appends (a node of a cluster, docs/cluster.md): with `transactional_id` set, every
// append is part of a Kafka transaction (transactional.id, init_transactions at open, so a
// previous incarnation of the same id is fenced and its open transaction aborted). The
// appends waiting when a transaction begins all go into it: one commit for many appends.
// Before it commits, the transaction commits offsets of the partitions it wrote for the
// consumer group `group_metadata` names, with that member's generation: the group
// coordinator refuses the offset commit from a member whose generation is stale (it was
// paused past its session timeout, cut off, or left the group) — Kafka Streams'
// exactly-once-v2 pattern — and the transaction is aborted. Then, beyond the guarantees
// above:
// - An append the coordinator refused that way fails with errc::unavailable and a message
//   starting "not the owner" (base/not_owner.hpp), and `maybe_stored` clear: its records
//   were aborted, and no reader of this log ever returns them. So does an append while the
//   node holds no membership (`group_metadata` answers "").
// - An append fails with `maybe_stored` only when its transaction's commit was sent and its
//   answer is unknown (a commit that timed out, a fatal producer error during the commit).
//   The producer is then replaced, and the new one's init_transactions completes or aborts
//   that transaction before any later append is taken, so the usual way of settling an
//   unknown fate (a later record of the same key) holds.
// - Reads return committed records only (isolation.level=read_committed, every reader).
//   Offsets still increase in each partition, but are not dense: a transaction's commit
//   marker takes an offset, and aborted records keep theirs. A read skips both; end_offset
//   is the offset after the last committed record below the last stable offset (so a
//   consumer that has read every record is at the end), and a record appended later gets an
//   offset at or above it.
// - A record is readable by read() once its append has completed, as ever: the log waits
//   (briefly) for the broker to write the commit's markers before it answers a read or an
//   end offset of a partition it committed to.
// - Every record carries the header `sandboxd-writer` with `writer` (the node's id).
#pragma once

#include "events/event_log.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::events {

struct kafka_log_test_seam;

struct kafka_log_options {
  std::string bootstrap_servers; // "host:port,host:port"
  std::string topic = "sandboxd-events";
  std::int32_t partitions = 8;
  // How many brokers keep each record, and how many must have it before an append is
  // acknowledged (acks=all with the topic's min.insync.replicas). The defaults keep every
  // acknowledged record through the loss of any one broker of a cluster of 3 or more. A
  // single broker (tests, a laptop) takes replication_factor 1 and min_insync_replicas 1:
  // the log opens, with a warning that an acknowledged record is then on one disk only.
  std::int16_t replication_factor = 3;
  std::int32_t min_insync_replicas = 2;
  // False only against librdkafka's mock cluster, which has no DescribeConfigs: the
  // topic's retention, cleanup policy and min.insync.replicas are then not checked (its
  // partition count and replication factor still are).
  bool check_topic_configs = true;
  // Where warnings go (settings that keep an acknowledged record on fewer than two
  // brokers); stderr when empty.
  std::function<void(const std::string&)> warn;
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

  // Fenced appends (header comment). Empty: the idempotent producer of a single node.
  std::string transactional_id;
  // The consumer group membership every transaction commits with: a serialized
  // rd_kafka_consumer_group_metadata (rd_kafka_consumer_group_metadata_write), or "" while the
  // node is no member (appends are refused: not the owner). Called once per transaction, on
  // the log's transaction thread; it must not block. Required with transactional_id.
  std::function<std::string()> group_metadata;
  // How long a transaction may stay open before the broker aborts it
  // (transaction.timeout.ms): bounds how long a writer that died mid-transaction holds back
  // the readers of the partitions it wrote.
  std::chrono::milliseconds transaction_timeout{10000};
  // The value of every record's `sandboxd-writer` header (a node's id); empty: no header.
  std::string writer;
  // The topic holds transactional records (a cluster's topic) though this log appends without
  // fencing (a tool reading it): reads skip markers and aborted records, and end_offset is
  // after the last committed record, as with fenced appends. Implied by transactional_id.
  bool read_transactions = false;
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
  std::string describe() const override;

  // How many times a failed producer was replaced.
  std::uint64_t producers_replaced() const;
  // Fenced appends: transactions committed, and appends refused because the group
  // coordinator fenced their transaction (not the owner).
  std::uint64_t transactions_committed() const;
  std::uint64_t appends_fenced() const;

protected:
  void do_append(std::vector<log_record> batch, append_callback done) override;
  read_result do_read(std::int32_t partition, std::int64_t from, std::size_t max) override;
  offset_result do_end_offset(std::int32_t partition) override;
  bool do_wait_for(std::int32_t partition, std::int64_t offset,
                   std::chrono::milliseconds timeout) override;

private:
  friend struct kafka_log_test_seam; // events/kafka_log_test_seam.hpp
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::events
