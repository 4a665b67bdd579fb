// kafka_log's fenced appends: the transaction thread puts the appends that wait into one
// Kafka transaction, commits the consumer group's offsets with it (so that the group
// coordinator refuses it from a member whose generation is stale), and settles each append by
// what the commit said (kafka_log.hpp, "Fenced appends").
//
// Each append's outcome, by where its transaction stopped:
//   no membership, begin or produce refused             -> not stored (nothing committed)
//   offsets refused (the group fenced this member)      -> aborted: not stored, "not the owner"
//   offsets or commit refused otherwise, abortable      -> aborted: not stored
//   commit answered                                     -> stored, at its delivery reports' offsets
//   commit unanswered (timed out) or a fatal error in it -> fate unknown (maybe_stored); the
//                                                          producer is replaced, whose
//                                                          init_transactions settles it
// A transaction this thread gave up on before committing can never commit: only this
// producer (or its replacement, which aborts it at init) could commit it.
#include "base/not_owner.hpp"
#include "events/kafka_log_impl.hpp"

#include <pthread.h>

namespace sandboxd::events {

using namespace kafka_log_parts;

namespace {

// Most records in one transaction; appends beyond wait for the next one.
constexpr std::size_t k_txn_max_records = 20000;

// The group coordinator refused this member's offset commit: its membership is stale.
bool group_fenced(rd_kafka_resp_err_t e) {
  switch (e) {
  case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
  case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
  case RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID:
  case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
    return true;
  default:
    return false;
  }
}

// Owns one rd_kafka_error_t.
class txn_error {
public:
  explicit txn_error(rd_kafka_error_t* e = nullptr) : e_(e) {}
  txn_error(const txn_error&) = delete;
  txn_error& operator=(const txn_error&) = delete;
  txn_error& operator=(rd_kafka_error_t* e) {
    if (e_)
      rd_kafka_error_destroy(e_);
    e_ = e;
    return *this;
  }
  ~txn_error() {
    if (e_)
      rd_kafka_error_destroy(e_);
  }
  explicit operator bool() const { return e_ != nullptr; }
  rd_kafka_resp_err_t code() const { return rd_kafka_error_code(e_); }
  std::string text() const { return rd_kafka_error_string(e_); }
  bool retriable() const { return rd_kafka_error_is_retriable(e_) != 0; }
  bool fatal() const { return rd_kafka_error_is_fatal(e_) != 0; }
  bool requires_abort() const { return rd_kafka_error_txn_requires_abort(e_) != 0; }

private:
  rd_kafka_error_t* e_;
};

int left_ms(clock::time_point deadline) {
  return to_ms(
    std::max(std::chrono::milliseconds(1),
             std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now())));
}

} // namespace

bool kafka_log::impl::init_transactions(rd_kafka_t* rk, clock::time_point deadline,
                                        std::string& why) {
  for (;;) {
    txn_error e(rd_kafka_init_transactions(rk, left_ms(deadline)));
    if (!e)
      return true;
    why = e.text();
    if (!e.retriable() || clock::now() >= deadline || closing.load())
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void kafka_log::impl::settle(inflight* a, std::optional<error> failure, bool maybe_stored) {
  // Every delivery report of its records comes before it is freed: librdkafka holds the
  // records' bytes (produced without a copy) until then. Commit and abort both wait for the
  // reports, so this waits only for the delivery thread to run them.
  bool reported;
  {
    std::unique_lock l(txn_mu);
    reported = txn_reports_cv.wait_for(l, options.append_timeout + std::chrono::seconds(10),
                                       [a] { return a->remaining.load() == 0; });
  }
  append_result r;
  if (failure) {
    r.failure = std::move(failure);
    r.maybe_stored = maybe_stored;
    if (maybe_stored)
      r.failure->message += "; the outcome is unknown: its transaction may have committed in " +
                            where +
                            " — read the partition back before deciding anything that depends "
                            "on it";
  } else {
    r.positions = std::move(a->positions);
  }
  auto done = std::move(a->done);
  // A report that never came (librdkafka lost track of a record) leaves the records where
  // librdkafka may still read them: kept rather than freed under it.
  if (reported)
    delete a;
  done(std::move(r));
  outstanding.fetch_sub(1);
}

void kafka_log::impl::replace_transactional_producer() {
  rd_kafka_t* old = producer;
  rd_kafka_purge(old, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  char err[512];
  rd_kafka_t* fresh = rd_kafka_new(RD_KAFKA_PRODUCER, make_conf(true), err, sizeof err);
  if (fresh == nullptr) {
    std::lock_guard l(status_mu);
    last_broker_error = std::string("cannot create a new transactional producer: ") + err;
    return; // tried again before the next transaction
  }
  std::string why;
  // The new producer's init fences the old one and settles its open transaction.
  if (!init_transactions(fresh, clock::now() + options.append_timeout, why)) {
    rd_kafka_destroy(fresh);
    std::lock_guard l(status_mu);
    last_broker_error = "the new transactional producer cannot start: " + why;
    return;
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

void kafka_log::impl::run_transactions() {
  ::pthread_setname_np(::pthread_self(), "sbd-kafka-txn");
  for (;;) {
    std::vector<inflight*> batch;
    {
      std::unique_lock l(txn_mu);
      txn_cv.wait(l, [this] { return txn_stop || !txn_waiting.empty(); });
      if (txn_waiting.empty())
        return;
      std::size_t records = 0;
      while (
        !txn_waiting.empty() &&
        (batch.empty() || records + txn_waiting.front()->records.size() <= k_txn_max_records)) {
        records += txn_waiting.front()->records.size();
        batch.push_back(txn_waiting.front());
        txn_waiting.pop_front();
      }
    }
    if (producer_failed.load())
      replace_transactional_producer();
    if (producer_failed.load()) {
      std::string last;
      {
        std::lock_guard l(status_mu);
        last = last_broker_error;
      }
      for (auto* a : batch) {
        a->remaining.store(0);
        settle(a,
               error{errc::unavailable, where + ": the transactional producer is being replaced (" +
                                          last + "); nothing was stored — retry the append"},
               false);
      }
      continue;
    }
    transact(batch);
  }
}

void kafka_log::impl::transact(std::vector<inflight*>& batch) {
  const auto deadline = clock::now() + options.append_timeout;
  // Records never handed to librdkafka get no delivery report.
  auto unsent = [](inflight* a, std::size_t from) {
    a->remaining.fetch_sub(a->records.size() - from, std::memory_order_acq_rel);
  };
  auto settle_all = [&](const std::optional<error>& failure, bool maybe_stored) {
    for (auto* a : batch)
      settle(a, failure, maybe_stored);
  };

  const std::string meta = options.group_metadata();
  if (meta.empty()) {
    for (auto* a : batch)
      unsent(a, 0);
    appends_fenced.fetch_add(batch.size());
    settle_all(not_owner(where + ": this node is not a member of the consumer group its "
                                 "appends commit with (joining, or it left); the partition's "
                                 "owner takes the command"),
               false);
    return;
  }
  rd_kafka_consumer_group_metadata_t* cgmd = nullptr;
  if (txn_error e(rd_kafka_consumer_group_metadata_read(&cgmd, meta.data(), meta.size())); e) {
    for (auto* a : batch)
      unsent(a, 0);
    settle_all(error{errc::internal, where + ": the consumer group's metadata does not read (" +
                                       e.text() + "); nothing was stored"},
               false);
    return;
  }
  struct cgmd_holder {
    rd_kafka_consumer_group_metadata_t* p;
    ~cgmd_holder() { rd_kafka_consumer_group_metadata_destroy(p); }
  } cgmd_owner{cgmd};

  // Only this thread replaces a transactional producer: holding the lock shared keeps the
  // watermark queries of readers off a producer being destroyed.
  std::shared_lock producer_lock(producer_mu);
  rd_kafka_t* rk = producer;
  auto refuse = [&](const txn_error& e, const std::string& what) {
    if (e.fatal())
      producer_failed = true;
    const bool fenced_out = group_fenced(e.code());
    if (fenced_out)
      appends_fenced.fetch_add(batch.size());
    settle_all(fenced_out ? not_owner(where + ": " + what + " refused by the group coordinator (" +
                                      e.text() +
                                      "): this node's membership of the consumer group is stale; "
                                      "its transaction was aborted and nothing was stored")
                          : broker_error(what + " failed; its transaction was aborted and "
                                                "nothing was stored",
                                         e.text()),
               false);
  };
  auto abort = [&] {
    txn_error e(rd_kafka_abort_transaction(rk, left_ms(deadline + options.append_timeout)));
    // A transaction that cannot be aborted here is aborted by the replacement's init.
    if (e)
      producer_failed = true;
  };

  if (txn_error e(rd_kafka_begin_transaction(rk)); e) {
    for (auto* a : batch)
      unsent(a, 0);
    refuse(e, "beginning a transaction");
    return;
  }
  std::vector<bool> touched(static_cast<std::size_t>(partitions), false);
  for (auto* a : batch) {
    for (std::size_t i = 0; i < a->records.size(); ++i) {
      auto& r = a->records[i];
      const auto e =
        options.writer.empty()
          ? rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(options.topic.c_str()),
                              RD_KAFKA_V_KEY(r.key.data(), r.key.size()),
                              RD_KAFKA_V_VALUE(r.value.data(), r.value.size()),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_BLOCK),
                              RD_KAFKA_V_OPAQUE(&a->refs[i]), RD_KAFKA_V_END)
          : rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(options.topic.c_str()),
                              RD_KAFKA_V_KEY(r.key.data(), r.key.size()),
                              RD_KAFKA_V_VALUE(r.value.data(), r.value.size()),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_BLOCK),
                              RD_KAFKA_V_HEADER("sandboxd-writer", options.writer.data(),
                                                static_cast<ssize_t>(options.writer.size())),
                              RD_KAFKA_V_OPAQUE(&a->refs[i]), RD_KAFKA_V_END);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // This record and the rest of the batch were never queued.
        bool past = false;
        for (auto* b : batch) {
          if (b == a) {
            unsent(b, i);
            past = true;
          } else if (past) {
            unsent(b, 0);
          }
        }
        abort();
        settle_all(
          error{e == RD_KAFKA_RESP_ERR__QUEUE_FULL ? errc::resource_exhausted : errc::unavailable,
                where + ": cannot queue a record (" + rd_kafka_err2str(e) +
                  "); its transaction was aborted and nothing was stored"},
          false);
        return;
      }
      touched[static_cast<std::size_t>(events::partition_for(r.key, partitions))] = true;
    }
  }

  // The offsets committed with the transaction: for each partition it wrote, the offset after
  // the last record this log committed there (what tools show as the group's position). Their
  // value matters to nobody; the commit's generation check is the point.
  rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(8);
  for (std::int32_t p = 0; p < partitions; ++p)
    if (touched[static_cast<std::size_t>(p)])
      rd_kafka_topic_partition_list_add(offsets, options.topic.c_str(), p)->offset =
        written_end[static_cast<std::size_t>(p)];
  txn_error sent;
  for (;;) {
    sent = rd_kafka_send_offsets_to_transaction(rk, offsets, cgmd, left_ms(deadline));
    if (!sent || !sent.retriable() || clock::now() >= deadline)
      break;
  }
  rd_kafka_topic_partition_list_destroy(offsets);
  if (sent) {
    if (!sent.fatal())
      abort();
    refuse(sent, "committing the group's offsets with the transaction");
    return;
  }

  txn_error committed;
  for (;;) {
    committed = rd_kafka_commit_transaction(rk, left_ms(deadline));
    if (!committed || !committed.retriable() || clock::now() >= deadline)
      break;
  }
  if (committed && committed.requires_abort()) {
    abort();
    refuse(committed, "committing the transaction");
    return;
  }
  if (committed) {
    // The commit may have reached the coordinator: its fate is settled by the replacement's
    // init_transactions, before any later transaction.
    producer_failed = true;
    settle_all(broker_error("committing the transaction did not complete", committed.text()), true);
    return;
  }
  transactions_committed.fetch_add(1);
  producer_lock.unlock();
  for (auto* a : batch) {
    {
      // The reports of a committed transaction are all there once commit returns; their
      // offsets are read after settle's wait.
      std::unique_lock l(txn_mu);
      txn_reports_cv.wait_for(l, options.append_timeout, [a] { return a->remaining.load() == 0; });
    }
    bool placed = true;
    for (const auto& pos : a->positions) {
      if (pos.partition < 0 || pos.offset < 0) {
        placed = false;
        continue;
      }
      auto& end = written_end[static_cast<std::size_t>(pos.partition)];
      end = std::max(end, pos.offset + 1);
      auto& visible = committed_end[static_cast<std::size_t>(pos.partition)];
      for (auto seen = visible.load(); seen < end && !visible.compare_exchange_weak(seen, end);) {
      }
    }
    if (placed)
      settle(a, std::nullopt, false);
    else // committed, but librdkafka did not say where every record went
      settle(a, broker_error("the transaction committed", "a record's offset was not reported"),
             true);
  }
}

} // namespace sandboxd::events
