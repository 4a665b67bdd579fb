#include "events/kafka_log.hpp"

#include "events/kafka_topic_config.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

namespace sandboxd::events {

namespace {

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
constexpr std::int64_t k_skip_limit = 10000;

int to_ms(std::chrono::milliseconds d) {
  return static_cast<int>(std::clamp<std::int64_t>(d.count(), 0, 1 << 30));
}

} // namespace

struct kafka_log::impl {
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
  // The reader's next fetched message: a buffered one, else one from librdkafka.
  rd_kafka_message_t* next_message(partition_reader& r, std::int32_t partition, int timeout_ms);

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque);
  static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque);
};

rd_kafka_conf_t* kafka_log::impl::make_conf(bool for_producer) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw log_fault(where + ": librdkafka property " + k + "=" + v + ": " + err);
    }
  };
  set("bootstrap.servers", options.bootstrap_servers);
  set("log_level", "3");
  if (for_producer) {
    set("enable.idempotence", "true");
    set("acks", "all");
    set("partitioner", "murmur2_random");
    set("linger.ms", std::to_string(options.linger.count()));
    set("message.timeout.ms",
        std::to_string(std::max<std::int64_t>(1, options.append_timeout.count())));
  } else {
    set("enable.partition.eof", "false");
    set("fetch.wait.max.ms", std::to_string(std::max<std::int64_t>(1, options.fetch_wait.count())));
  }
  for (const auto& [k, v] : options.config)
    set(k, v);
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_error_cb(conf, &impl::on_error);
  if (for_producer)
    rd_kafka_conf_set_dr_msg_cb(conf, &impl::on_delivery);
  return conf;
}

kafka_log::impl::impl(const kafka_log_options& o)
    : options(o), where("kafka log topic " + o.topic + " at " + o.bootstrap_servers) {
  if (options.bootstrap_servers.empty())
    throw log_fault("kafka log: no bootstrap servers given");
  char err[512];
  producer = rd_kafka_new(RD_KAFKA_PRODUCER, make_conf(true), err, sizeof err);
  if (producer == nullptr)
    throw log_fault(where + ": cannot create the producer: " + err);
  try {
    ensure_topic();
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, make_conf(false), err, sizeof err);
    if (consumer == nullptr)
      throw log_fault(where + ": cannot create the consumer: " + err);
    consumer_topic = rd_kafka_topic_new(consumer, options.topic.c_str(), nullptr);
    if (consumer_topic == nullptr)
      throw log_fault(
        where + ": cannot open the topic for reading: " + rd_kafka_err2str(rd_kafka_last_error()));
  } catch (...) {
    if (consumer != nullptr)
      rd_kafka_destroy(consumer);
    rd_kafka_destroy(producer);
    throw;
  }
  for (std::int32_t p = 0; p < partitions; ++p)
    readers.push_back(std::make_unique<partition_reader>());
  delivery = std::thread([this] {
    while (!stopping.load()) {
      rd_kafka_poll(producer, 100);
      if (producer_failed.load() && !closing.load())
        replace_producer();
    }
  });
  delivery_id = delivery.get_id();
}

kafka_log::impl::~impl() {
  closing = true;
  // Not rd_kafka_flush: it would run delivery reports (completions) on this thread too.
  auto drain = [&](std::chrono::steady_clock::duration limit) {
    const auto deadline = clock::now() + limit;
    while (outstanding.load() > 0 && clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  drain(options.append_timeout);
  {
    std::shared_lock l(producer_mu); // the delivery thread may be replacing it
    rd_kafka_purge(producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  }
  // Purged records get their (failed) delivery reports from the delivery thread.
  drain(std::chrono::seconds(10));
  stopping = true;
  delivery.join();
  for (std::size_t p = 0; p < readers.size(); ++p)
    restart_reader(*readers[p], static_cast<std::int32_t>(p));
  rd_kafka_topic_destroy(consumer_topic);
  rd_kafka_destroy(consumer);
  rd_kafka_destroy(producer);
}

namespace {

// Runs one admin request on `rk` and returns its result event (nullptr when no answer came
// within `timeout_ms`); `problem` holds the request's own error.
rd_kafka_event_t* admin_result(rd_kafka_t* rk, int timeout_ms,
                               const std::function<void(rd_kafka_queue_t*)>& request,
                               std::string& problem) {
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  request(q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms);
  rd_kafka_queue_destroy(q);
  if (ev == nullptr)
    problem = "no answer";
  else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR)
    problem = rd_kafka_event_error_string(ev);
  return ev;
}

} // namespace

std::string kafka_log::impl::create_topic(int timeout_ms) {
  char err[512];
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(options.topic.c_str(), options.partitions,
                                                  options.replication_factor, err, sizeof err);
  if (nt == nullptr)
    throw log_fault(where + ": cannot describe the new topic: " + err);
  for (const auto& [name, value] : topic_configs_for(requirements()))
    if (rd_kafka_NewTopic_set_config(nt, name.c_str(), value.c_str()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_NewTopic_destroy(nt);
      throw log_fault(where + ": cannot set " + name + " on the new topic");
    }
  std::string problem;
  rd_kafka_event_t* ev = admin_result(
    producer, timeout_ms,
    [&](rd_kafka_queue_t* q) { rd_kafka_CreateTopics(producer, &nt, 1, nullptr, q); }, problem);
  if (ev != nullptr && problem.empty()) {
    if (const auto* res = rd_kafka_event_CreateTopics_result(ev)) {
      std::size_t n = 0;
      const auto** topics = rd_kafka_CreateTopics_result_topics(res, &n);
      for (std::size_t i = 0; i < n; ++i) {
        auto te = rd_kafka_topic_result_error(topics[i]);
        if (te != RD_KAFKA_RESP_ERR_NO_ERROR && te != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
          problem = rd_kafka_err2str(te) + std::string(": ") +
                    (rd_kafka_topic_result_error_string(topics[i])
                       ? rd_kafka_topic_result_error_string(topics[i])
                       : "");
      }
    }
  }
  if (ev != nullptr)
    rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  return problem;
}

std::map<std::string, std::string> kafka_log::impl::describe_topic_configs(int timeout_ms) {
  rd_kafka_ConfigResource_t* resource =
    rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, options.topic.c_str());
  std::string problem;
  rd_kafka_event_t* ev = admin_result(
    producer, timeout_ms,
    [&](rd_kafka_queue_t* q) { rd_kafka_DescribeConfigs(producer, &resource, 1, nullptr, q); },
    problem);
  std::map<std::string, std::string> out;
  if (ev != nullptr && problem.empty()) {
    std::size_t n = 0;
    const auto* res = rd_kafka_event_DescribeConfigs_result(ev);
    const auto** resources = res ? rd_kafka_DescribeConfigs_result_resources(res, &n) : nullptr;
    if (n != 1) {
      problem = "no description of the topic in the answer";
    } else if (rd_kafka_ConfigResource_error(resources[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* why = rd_kafka_ConfigResource_error_string(resources[0]);
      problem = why ? why : rd_kafka_err2str(rd_kafka_ConfigResource_error(resources[0]));
    } else {
      std::size_t count = 0;
      const auto** entries = rd_kafka_ConfigResource_configs(resources[0], &count);
      for (std::size_t i = 0; i < count; ++i) {
        const char* value = rd_kafka_ConfigEntry_value(entries[i]);
        out[rd_kafka_ConfigEntry_name(entries[i])] = value ? value : "";
      }
    }
  }
  if (ev != nullptr)
    rd_kafka_event_destroy(ev);
  rd_kafka_ConfigResource_destroy(resource);
  if (!problem.empty())
    throw log_fault(where + ": cannot describe the topic's configs (" + problem +
                    "); the log does not use a topic whose retention and replication it "
                    "cannot check");
  return out;
}

void kafka_log::impl::ensure_topic() {
  if (auto problem = requirements_problem(requirements()))
    throw log_fault(where + ": " + *problem);
  if (single_copy(requirements())) {
    const std::string warning =
      where + ": min_insync_replicas is " + std::to_string(options.min_insync_replicas) +
      " (replication factor " + std::to_string(options.replication_factor) +
      "): an acknowledged event may be on one broker only, and is lost with its disk; use "
      "replication_factor 3 and min_insync_replicas 2 on a cluster of 3 or more brokers";
    if (options.warn)
      options.warn(warning);
    else
      std::fprintf(stderr, "sandboxd: warning: %s\n", warning.c_str());
  }
  const auto deadline = clock::now() + options.open_timeout;
  bool asked_to_create = false;
  std::string last_problem;
  for (;;) {
    const rd_kafka_metadata_t* md = nullptr;
    const int left = to_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - clock::now(), clock::duration(std::chrono::milliseconds(1)))));
    // All topics: asking for one by name could create it with the broker's defaults.
    auto e = rd_kafka_metadata(producer, 1, nullptr, &md, left);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      last_problem = rd_kafka_err2str(e);
    } else {
      const rd_kafka_metadata_topic_t* found = nullptr;
      for (int i = 0; i < md->topic_cnt; ++i)
        if (options.topic == md->topics[i].topic)
          found = &md->topics[i];
      if (found != nullptr && found->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        kafka_topic_state state;
        state.partitions = found->partition_cnt;
        state.fewest_replicas = found->partition_cnt > 0 ? INT32_MAX : 0;
        bool leaders = true;
        for (int i = 0; i < found->partition_cnt; ++i) {
          const auto& p = found->partitions[i];
          leaders = leaders && p.leader >= 0 && p.err == RD_KAFKA_RESP_ERR_NO_ERROR;
          state.fewest_replicas = std::min(state.fewest_replicas, p.replica_cnt);
        }
        rd_kafka_metadata_destroy(md);
        if (leaders) {
          if (options.check_topic_configs)
            state.configs = describe_topic_configs(left);
          auto problems = topic_problems(options.topic, requirements(), state);
          if (!problems.empty()) {
            std::string message = where + " would not keep every event:";
            for (const auto& p : problems)
              message += "\n  - " + p;
            message += "\nFix the topic, or point the log at another (new) topic.";
            throw log_fault(message);
          }
          partitions = state.partitions;
          return;
        }
        last_problem = "partitions without a leader yet";
      } else {
        rd_kafka_metadata_destroy(md);
        if (!asked_to_create) {
          asked_to_create = true;
          if (auto problem = create_topic(left); !problem.empty())
            last_problem = "creating the topic failed: " + problem;
        }
        if (last_problem.empty())
          last_problem = "the topic does not exist yet";
      }
    }
    if (clock::now() >= deadline)
      throw log_fault(where + ": not ready within " + std::to_string(options.open_timeout.count()) +
                      " ms (" + last_problem +
                      "); check that the brokers are reachable and the topic can be created");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void kafka_log::impl::on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<impl*>(opaque);
  std::lock_guard l(self->status_mu);
  self->last_broker_error = reason;
  // Error callbacks are served by rd_kafka_poll, on the delivery thread: the one thread
  // that replaces the producer, so reading `producer` here needs no lock.
  if (err == RD_KAFKA_RESP_ERR__FATAL && rk == self->producer) {
    char why[512];
    rd_kafka_fatal_error(rk, why, sizeof why);
    self->fatal = error{errc::unavailable, self->where + ": the producer failed (" + why +
                                             "); a new producer is being created — retry the "
                                             "append"};
    self->producer_failed = true;
  }
}

void kafka_log::impl::replace_producer() {
  rd_kafka_t* old = producer;
  // Appends are refused meanwhile (`fatal`). What the old producer holds is purged: those
  // records get failed delivery reports, so their appends fail — maybe_stored when a record
  // had been sent (the broker may have kept it), not stored when it was still queued.
  rd_kafka_purge(old, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  const auto deadline = clock::now() + std::chrono::seconds(10);
  while (rd_kafka_outq_len(old) > 0 && clock::now() < deadline && !stopping.load())
    rd_kafka_poll(old, 50);
  rd_kafka_poll(old, 0);
  if (rd_kafka_outq_len(old) > 0)
    return; // still draining (or closing): tried again after the next poll
  char err[512];
  rd_kafka_t* fresh = rd_kafka_new(RD_KAFKA_PRODUCER, make_conf(true), err, sizeof err);
  if (fresh == nullptr) {
    std::lock_guard l(status_mu);
    last_broker_error = std::string("cannot create a new producer: ") + err;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return; // tried again
  }
  {
    std::unique_lock l(producer_mu);
    producer = fresh;
  }
  {
    std::lock_guard l(status_mu);
    fatal.reset();
    ++producers_replaced;
  }
  producer_failed = false;
  rd_kafka_destroy(old);
}

error kafka_log::impl::broker_error(const std::string& what, const std::string& detail) {
  std::string last;
  {
    std::lock_guard l(status_mu);
    last = last_broker_error;
  }
  return error{errc::unavailable,
               where + ": " + what + " (" + detail + ")" +
                 (last.empty() ? std::string() : "; last broker error: " + last) +
                 "; check that the brokers " + options.bootstrap_servers + " are reachable"};
}

void kafka_log::impl::complete(inflight* a) {
  append_result r;
  {
    std::lock_guard l(a->failure_mu);
    r.failure = a->failure;
  }
  if (r.ok()) {
    r.positions = std::move(a->positions);
  } else if (a->some_stored.load()) {
    r.maybe_stored = true;
    r.failure->message +=
      "; the outcome is unknown: some or all of its records may be stored in " + where +
      " (now or later) — read the partition back before deciding anything that depends on it";
  }
  auto done = std::move(a->done);
  delete a;
  done(std::move(r));
  outstanding.fetch_sub(1);
}

namespace {

// What a delivery report says about its record: stored (at a known offset), not stored,
// or unknown. The rule is kafka_log.hpp's header comment.
enum class record_fate { stored, not_stored, unknown };

record_fate fate_of(const rd_kafka_message_t* m) {
  switch (rd_kafka_message_status(m)) {
  case RD_KAFKA_MSG_STATUS_PERSISTED:
    return m->offset >= 0 ? record_fate::stored : record_fate::unknown;
  case RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED:
    return record_fate::unknown;
  case RD_KAFKA_MSG_STATUS_NOT_PERSISTED:
    break;
  }
  return record_fate::not_stored;
}

} // namespace

void kafka_log::impl::on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<impl*>(opaque);
  auto* ref = static_cast<inflight::ref*>(m->_private);
  inflight* a = ref->owner;
  const record_fate fate = fate_of(m);
  if (fate == record_fate::stored) {
    a->positions[ref->index] = {m->partition, m->offset};
    a->some_stored = true;
  } else {
    if (fate == record_fate::unknown)
      a->some_stored = true;
    const std::string what = m->err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
                               ? "append not acknowledged within " +
                                   std::to_string(self->options.append_timeout.count()) + " ms"
                               : "append failed";
    a->fail(self->broker_error(what, m->err == RD_KAFKA_RESP_ERR_NO_ERROR
                                       ? "no offset reported"
                                       : rd_kafka_err2str(m->err)));
  }
  if (a->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1)
    self->complete(a);
}

kafka_log::kafka_log(const kafka_log_options& options) : impl_(std::make_unique<impl>(options)) {}

kafka_log::~kafka_log() = default;

std::int32_t kafka_log::partitions() const {
  return impl_->partitions;
}

std::string kafka_log::describe() const {
  return impl_->where;
}

void kafka_log::inject_fatal_producer_error(const std::string& reason) {
  std::shared_lock l(impl_->producer_mu);
  rd_kafka_test_fatal_error(impl_->producer, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                            reason.c_str());
}

std::uint64_t kafka_log::producers_replaced() const {
  std::lock_guard l(impl_->status_mu);
  return impl_->producers_replaced;
}

void kafka_log::append(std::vector<log_record> batch, append_callback done) {
  auto& m = *impl_;
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].key.empty()) {
      done(append_result{
        {},
        error{errc::invalid_argument, "record " + std::to_string(i) +
                                        " of the batch has an empty key; every record needs a "
                                        "key (its sandbox id)"}});
      return;
    }
  if (batch.empty()) {
    done(append_result{});
    return;
  }
  std::optional<error> refusal;
  {
    std::lock_guard l(m.status_mu);
    refusal = m.fatal;
  }
  if (m.closing)
    refusal = error{errc::unavailable, m.where + " is closed; it takes no more appends"};
  if (refusal) {
    done(append_result{{}, refusal});
    return;
  }
  const std::size_t n = batch.size();
  auto* a = new inflight;
  a->records = std::move(batch);
  a->refs.reset(new inflight::ref[n]);
  a->positions.resize(n);
  a->done = std::move(done);
  a->remaining.store(n);
  m.outstanding.fetch_add(1);
  // The delivery thread must not block on a full queue: only it frees room.
  const int flags = std::this_thread::get_id() == m.delivery_id ? 0 : RD_KAFKA_MSG_F_BLOCK;
  std::shared_lock producer_lock(m.producer_mu);
  for (std::size_t i = 0; i < n; ++i) {
    a->refs[i] = {a, static_cast<std::uint32_t>(i)};
    auto& r = a->records[i];
    auto e = rd_kafka_producev(
      m.producer, RD_KAFKA_V_TOPIC(m.options.topic.c_str()),
      RD_KAFKA_V_KEY(r.key.data(), r.key.size()), RD_KAFKA_V_VALUE(r.value.data(), r.value.size()),
      RD_KAFKA_V_MSGFLAGS(flags), RD_KAFKA_V_OPAQUE(&a->refs[i]), RD_KAFKA_V_END);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      a->fail(
        error{e == RD_KAFKA_RESP_ERR__QUEUE_FULL ? errc::resource_exhausted : errc::unavailable,
              m.where + ": cannot queue record " + std::to_string(i) + " (" + rd_kafka_err2str(e) +
                "); the append is not durable"});
      producer_lock.unlock(); // the callback may append again
      // The records never queued will get no delivery report.
      if (a->remaining.fetch_sub(n - i, std::memory_order_acq_rel) == n - i)
        m.complete(a);
      return;
    }
  }
}

void kafka_log::impl::restart_reader(partition_reader& r, std::int32_t partition) {
  for (auto* msg : r.buffered)
    rd_kafka_message_destroy(msg);
  r.buffered.clear();
  if (r.started)
    rd_kafka_consume_stop(consumer_topic, partition);
  r.started = false;
}

bool kafka_log::impl::position(partition_reader& r, std::int32_t partition, std::int64_t offset,
                               std::optional<error>& failure) {
  // A reader a little behind catches up by skipping fetched records: cheaper than a
  // restart, which waits for the broker's next fetch round.
  if (r.started && r.next <= offset && offset - r.next <= k_skip_limit)
    return true;
  restart_reader(r, partition);
  if (rd_kafka_consume_start(consumer_topic, partition, offset) != 0) {
    failure = broker_error("cannot start reading partition " + std::to_string(partition),
                           rd_kafka_err2str(rd_kafka_last_error()));
    return false;
  }
  r.started = true;
  r.next = offset;
  return true;
}

rd_kafka_message_t* kafka_log::impl::next_message(partition_reader& r, std::int32_t partition,
                                                  int timeout_ms) {
  if (!r.buffered.empty()) {
    auto* msg = r.buffered.front();
    r.buffered.pop_front();
    return msg;
  }
  return rd_kafka_consume(consumer_topic, partition, timeout_ms);
}

read_result kafka_log::read(std::int32_t partition, std::int64_t from, std::size_t max) {
  auto& m = *impl_;
  read_result out;
  if (partition < 0 || partition >= m.partitions || from < 0) {
    out.failure = error{errc::invalid_argument,
                        "cannot read partition " + std::to_string(partition) + " from offset " +
                          std::to_string(from) + ": " + m.where + " has partitions 0.." +
                          std::to_string(m.partitions - 1) + " and offsets start at 0"};
    return out;
  }
  if (max == 0)
    return out;
  auto& r = *m.readers[partition];
  std::lock_guard l(r.mu);
  // Records exist at `from` only below the high watermark; never wait for others.
  std::int64_t low = 0, high = 0;
  rd_kafka_resp_err_t e;
  {
    std::shared_lock producer_lock(m.producer_mu);
    e = rd_kafka_query_watermark_offsets(m.producer, m.options.topic.c_str(), partition, &low,
                                         &high, to_ms(m.options.append_timeout));
  }
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    out.failure = m.broker_error("cannot learn the end of partition " + std::to_string(partition),
                                 rd_kafka_err2str(e));
    return out;
  }
  if (from >= high)
    return out;
  if (!m.position(r, partition, from, out.failure))
    return out;
  const std::size_t want = static_cast<std::size_t>(std::min<std::int64_t>(max, high - from));
  std::int64_t expect = from;
  const auto deadline = clock::now() + m.options.append_timeout;
  while (out.records.size() < want && !out.failure) {
    // Wait for the fetch while nothing is taken yet; afterwards take only what is there.
    const bool first = out.records.empty();
    if (first && clock::now() >= deadline) {
      out.failure = m.broker_error("records of partition " + std::to_string(partition) +
                                     " from offset " + std::to_string(from) + " did not arrive",
                                   "fetch timed out");
      break;
    }
    auto* msg = m.next_message(r, partition, first ? 100 : 0);
    if (msg == nullptr) {
      if (first)
        continue;
      break;
    }
    if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
        out.failure = m.broker_error("reading partition " + std::to_string(partition) + " failed",
                                     rd_kafka_message_errstr(msg));
    } else if (msg->offset < expect) {
      r.next = msg->offset + 1; // skipping up to `from`
    } else if (msg->offset == expect) {
      out.records.push_back({partition, msg->offset,
                             std::string(static_cast<const char*>(msg->key), msg->key_len),
                             std::string(static_cast<const char*>(msg->payload), msg->len)});
      r.next = ++expect;
    } else {
      out.failure =
        error{errc::unavailable, m.where + ": partition " + std::to_string(partition) +
                                   " skipped from offset " + std::to_string(expect) + " to " +
                                   std::to_string(msg->offset) +
                                   "; records were deleted (retention?) — the event log must keep "
                                   "every record"};
    }
    rd_kafka_message_destroy(msg);
  }
  if (out.failure) {
    m.restart_reader(r, partition);
    out.records.clear();
  }
  return out;
}

offset_result kafka_log::end_offset(std::int32_t partition) {
  auto& m = *impl_;
  if (partition < 0 || partition >= m.partitions)
    return {-1, error{errc::invalid_argument,
                      m.where + " has no partition " + std::to_string(partition)}};
  std::int64_t low = 0, high = 0;
  rd_kafka_resp_err_t e;
  {
    std::shared_lock producer_lock(m.producer_mu);
    e = rd_kafka_query_watermark_offsets(m.producer, m.options.topic.c_str(), partition, &low,
                                         &high, to_ms(m.options.append_timeout));
  }
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return {-1, m.broker_error("cannot learn the end of partition " + std::to_string(partition),
                               rd_kafka_err2str(e))};
  return {high, std::nullopt};
}

bool kafka_log::wait_for(std::int32_t partition, std::int64_t offset,
                         std::chrono::milliseconds timeout) {
  auto& m = *impl_;
  if (partition < 0 || partition >= m.partitions || offset < 0)
    return false;
  auto& r = *m.readers[partition];
  std::lock_guard l(r.mu);
  std::optional<error> failure;
  if (!m.position(r, partition, offset, failure))
    return false;
  const auto deadline = clock::now() + timeout;
  for (;;) {
    const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    // The broker holds each fetch until records arrive (fetch.wait.max.ms); this thread
    // sleeps in librdkafka's queue meanwhile.
    auto* msg = m.next_message(r, partition, to_ms(std::max(left, std::chrono::milliseconds(0))));
    if (msg == nullptr)
      return false;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && msg->offset >= r.next) {
      if (msg->offset >= offset) {
        // Kept for the read that follows.
        r.buffered.push_front(msg);
        return true;
      }
      r.next = msg->offset + 1;
    }
    rd_kafka_message_destroy(msg);
    if (clock::now() >= deadline)
      return false;
  }
}

} // namespace sandboxd::events
