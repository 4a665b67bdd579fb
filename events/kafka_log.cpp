// kafka_log's producer: its configuration, appends, the delivery reports that complete them
// (stored, not stored, or of unknown fate), and the replacement of a failed producer.
#include "events/kafka_log_impl.hpp"
#include "events/kafka_log_test_seam.hpp"

#include <cstdio>

namespace sandboxd::events {

using namespace kafka_log_parts;

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
    auto message_timeout = std::max<std::int64_t>(1, options.append_timeout.count());
    if (fenced) {
      set("transactional.id", options.transactional_id);
      const auto txn_timeout = std::max<std::int64_t>(1000, options.transaction_timeout.count());
      set("transaction.timeout.ms", std::to_string(txn_timeout));
      // librdkafka requires it: a record cannot outlive its transaction.
      message_timeout = std::min(message_timeout, txn_timeout);
      // The coordinator answers CONCURRENT_TRANSACTIONS to the next transaction's first
      // requests until the last one's markers are written (a few ms): librdkafka's default
      // backoff of 100 ms before asking again would cost every transaction that much.
      set("retry.backoff.ms", "5");
    }
    set("message.timeout.ms", std::to_string(message_timeout));
  } else {
    set("enable.partition.eof", "false");
    set("fetch.wait.max.ms", std::to_string(std::max<std::int64_t>(1, options.fetch_wait.count())));
    // Committed records only: what fenced appends aborted is never read (librdkafka's
    // default, stated here because the cluster's fencing depends on it).
    set("isolation.level", "read_committed");
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
    : options(o), where("kafka log topic " + o.topic + " at " + o.bootstrap_servers),
      fenced(!o.transactional_id.empty()), sparse(fenced || o.read_transactions) {
  if (options.bootstrap_servers.empty())
    throw log_fault("kafka log: no bootstrap servers given");
  if (fenced && !options.group_metadata)
    throw log_fault(where + ": fenced appends (transactional id " + options.transactional_id +
                    ") need the consumer group membership they commit with");
  char err[512];
  producer = rd_kafka_new(RD_KAFKA_PRODUCER, make_conf(true), err, sizeof err);
  if (producer == nullptr)
    throw log_fault(where + ": cannot create the producer: " + err);
  auto open_topic = [&](rd_kafka_t*& rk, rd_kafka_topic_t*& topic, const char* what) {
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, make_conf(false), err, sizeof err);
    if (rk == nullptr)
      throw log_fault(where + ": cannot create the " + what + ": " + err);
    topic = rd_kafka_topic_new(rk, options.topic.c_str(), nullptr);
    if (topic == nullptr)
      throw log_fault(where + ": cannot open the topic for the " + what + ": " +
                      rd_kafka_err2str(rd_kafka_last_error()));
  };
  try {
    ensure_topic();
    open_topic(consumer, consumer_topic, "consumer");
    if (sparse)
      open_topic(probe, probe_topic, "end-of-partition probe");
    if (fenced) {
      std::string why;
      // Fences every earlier producer of this transactional id and settles its open
      // transaction (aborted, or completed when its commit was already under way).
      if (!init_transactions(producer, clock::now() + options.open_timeout, why))
        throw log_fault(where + ": cannot start the transactional producer " +
                        options.transactional_id + ": " + why +
                        "; check that the brokers are reachable and allow transactions");
    }
  } catch (...) {
    if (probe_topic != nullptr)
      rd_kafka_topic_destroy(probe_topic);
    if (probe != nullptr)
      rd_kafka_destroy(probe);
    if (consumer_topic != nullptr)
      rd_kafka_topic_destroy(consumer_topic);
    if (consumer != nullptr)
      rd_kafka_destroy(consumer);
    rd_kafka_destroy(producer);
    throw;
  }
  for (std::int32_t p = 0; p < partitions; ++p) {
    readers.push_back(std::make_unique<partition_reader>());
    tails.push_back(std::make_unique<partition_tail>());
  }
  written_end.assign(static_cast<std::size_t>(partitions), 0);
  committed_end =
    std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(partitions));
  for (std::int32_t p = 0; p < partitions; ++p)
    committed_end[static_cast<std::size_t>(p)] = 0;
  delivery = std::thread([this] {
    while (!stopping.load()) {
      rd_kafka_poll(producer, 100);
      // A transactional producer is replaced by the transaction thread, between transactions.
      if (!fenced && producer_failed.load() && !closing.load())
        replace_producer();
    }
  });
  delivery_id = delivery.get_id();
  if (fenced)
    txn_thread = std::thread([this] { run_transactions(); });
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
  if (txn_thread.joinable()) {
    {
      std::lock_guard l(txn_mu);
      txn_stop = true;
    }
    txn_cv.notify_all();
    txn_thread.join();
  }
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
  if (probe != nullptr) {
    rd_kafka_topic_destroy(probe_topic);
    rd_kafka_destroy(probe);
  }
  rd_kafka_destroy(producer);
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
  if (a->in_txn) {
    // Where the record went; whether it counts is what the transaction's commit says.
    if (fate == record_fate::stored)
      a->positions[ref->index] = {m->partition, m->offset};
    if (a->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard l(self->txn_mu);
      self->txn_reports_cv.notify_all();
    }
    return;
  }
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

void kafka_log_test_seam::inject_fatal_producer_error(kafka_log& log, const std::string& reason) {
  auto& m = *log.impl_;
  std::shared_lock l(m.producer_mu);
  rd_kafka_test_fatal_error(m.producer, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                            reason.c_str());
}

std::uint64_t kafka_log::producers_replaced() const {
  std::lock_guard l(impl_->status_mu);
  return impl_->producers_replaced;
}

std::uint64_t kafka_log::transactions_committed() const {
  return impl_->transactions_committed.load();
}

std::uint64_t kafka_log::appends_fenced() const {
  return impl_->appends_fenced.load();
}

void kafka_log::do_append(std::vector<log_record> batch, append_callback done) {
  auto& m = *impl_;
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
  if (m.fenced) {
    a->in_txn = true;
    for (std::size_t i = 0; i < n; ++i)
      a->refs[i] = {a, static_cast<std::uint32_t>(i)};
    {
      std::lock_guard l(m.txn_mu);
      m.txn_waiting.push_back(a);
    }
    m.txn_cv.notify_one();
    return;
  }
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

} // namespace sandboxd::events
