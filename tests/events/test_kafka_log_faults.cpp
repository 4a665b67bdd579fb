// kafka_log under broker faults: a mock broker going down and up during appends, the real
// broker stopped (SIGSTOP) and then killed and restarted on its data directory, and every
// broker gone for longer than the append time limit. Acknowledged records are never lost
// or duplicated, and a failed append is never reported durable.
#define BOOST_TEST_MODULE kafka_log_faults
#include <boost/test/unit_test.hpp>

#include "events/kafka_log.hpp"
#include "events/kafka_log_test_seam.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_log_options.hpp"
#include "tests/support/kafka_mock.hpp"

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace sandboxd::events;
using namespace std::chrono_literals;

namespace {

// Appends numbered records from a background thread, up to `window` appends in flight,
// and keeps what each completion said.
class appender {
public:
  appender(event_log& log, int keys) : log_(log), keys_(keys) {
    thread_ = std::thread([this] { run(); });
  }
  ~appender() { stop(); }

  // Stops issuing appends and waits for every completion.
  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return inflight_ == 0; });
  }
  std::size_t acknowledged_count() {
    std::lock_guard l(mu_);
    return acknowledged_.size();
  }
  // Blocks until `n` more records than now were acknowledged, or `timeout` passed.
  bool wait_for_more(std::size_t n, std::chrono::seconds timeout) {
    std::unique_lock l(mu_);
    const auto target = acknowledged_.size() + n;
    return cv_.wait_for(l, timeout, [&] { return acknowledged_.size() >= target; });
  }

  std::map<std::string, record_position> acknowledged_; // value -> where it was stored
  std::vector<std::string> failures_;
  std::set<std::string> not_stored_; // values of failed appends without maybe_stored
  std::size_t maybe_stored_appends_ = 0;

private:
  void run() {
    int seq = 0;
    while (!stop_) {
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return inflight_ < 32; });
        ++inflight_;
      }
      std::vector<log_record> batch;
      for (int i = 0; i < 5; ++i, ++seq)
        batch.push_back({"sb_" + std::to_string(seq % keys_), "record-" + std::to_string(seq)});
      auto values = std::make_shared<std::vector<std::string>>();
      for (const auto& r : batch)
        values->push_back(r.value);
      log_.append(std::move(batch), [this, values](append_result r) {
        std::lock_guard l(mu_);
        if (r.ok()) {
          for (std::size_t i = 0; i < values->size(); ++i)
            acknowledged_[(*values)[i]] = r.positions[i];
        } else {
          failures_.push_back(r.failure->message);
          maybe_stored_appends_ += r.maybe_stored;
          if (!r.maybe_stored)
            not_stored_.insert(values->begin(), values->end());
        }
        --inflight_;
        cv_.notify_all();
      });
    }
  }

  event_log& log_;
  int keys_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inflight_ = 0;
};

// Reads every partition from 0 and checks the acknowledged records: each at the position
// its append reported, no value twice, each key's records in sequence order; and that no
// record of an append that failed as certainly not stored is there.
void check_acknowledged(event_log& log, const std::map<std::string, record_position>& acked,
                        const std::set<std::string>& not_stored = {}) {
  std::map<std::string, record_position> stored;
  std::size_t duplicates = 0, out_of_order = 0;
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    std::map<std::string, int> last_seq;
    std::int64_t at = 0;
    for (;;) {
      auto r = log.read(p, at, 5000);
      BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
      if (r.records.empty())
        break;
      for (const auto& rec : r.records) {
        duplicates += !stored.emplace(rec.value, record_position{p, rec.offset}).second;
        const int seq = std::stoi(rec.value.substr(7));
        auto [it, fresh] = last_seq.emplace(rec.key, seq);
        if (!fresh) {
          out_of_order += seq <= it->second;
          it->second = seq;
        }
      }
      at += static_cast<std::int64_t>(r.records.size());
    }
  }
  std::size_t lost = 0, moved = 0, stored_though_failed = 0;
  for (const auto& value : not_stored)
    stored_though_failed += stored.count(value);
  for (const auto& [value, pos] : acked) {
    auto it = stored.find(value);
    if (it == stored.end())
      ++lost;
    else
      moved += !(it->second == pos);
  }
  BOOST_TEST_MESSAGE(acked.size() << " acknowledged, " << stored.size() << " stored");
  BOOST_TEST(lost == 0u);
  BOOST_TEST(moved == 0u);
  BOOST_TEST(duplicates == 0u);
  BOOST_TEST(out_of_order == 0u);
  BOOST_TEST(stored_though_failed == 0u, stored_though_failed
                                           << " records of appends reported as not stored are "
                                              "in the log (they had to be maybe_stored)");
}

} // namespace

BOOST_AUTO_TEST_CASE(mock_broker_down_and_up_during_appends_loses_and_duplicates_nothing) {
  sandboxd::test::kafka_mock_cluster mock;
  mock.create_topic("faults", 6);
  for (int p = 0; p < 6; ++p)
    mock.set_leader("faults", p, 1 + p % 3);
  auto o = sandboxd::test::mock_cluster_log(mock.bootstrap(), "faults", 6);
  o.append_timeout = 60s;
  kafka_log log(o);
  appender a(log, 50);
  BOOST_REQUIRE(a.wait_for_more(2000, 30s));
  mock.broker_down(2); // leader of partitions 1 and 4
  std::this_thread::sleep_for(1500ms);
  mock.broker_up(2);
  BOOST_REQUIRE(a.wait_for_more(2000, 60s));
  a.stop();
  BOOST_TEST(a.failures_.empty());
  check_acknowledged(log, a.acknowledged_);
  // Both partitions behind the broker that went away were written before and after.
  std::set<std::int32_t> used;
  for (const auto& [value, pos] : a.acknowledged_)
    used.insert(pos.partition);
  BOOST_TEST(used.size() == 6u);
}

BOOST_AUTO_TEST_CASE(real_broker_stopped_then_killed_and_restarted_loses_no_acknowledged_record) {
  sandboxd::test::kafka_broker broker;
  auto o = sandboxd::test::single_broker_log(broker.bootstrap(), "faults-real", 4);
  o.append_timeout = 45s; // longer than the restart, so most appends ride it out
  std::map<std::string, record_position> acked;
  std::set<std::string> not_stored;
  {
    kafka_log log(o);
    appender a(log, 40);
    BOOST_REQUIRE(a.wait_for_more(2000, 60s));
    broker.suspend();
    std::this_thread::sleep_for(3s);
    broker.resume();
    BOOST_REQUIRE(a.wait_for_more(2000, 60s));
    broker.kill();
    std::this_thread::sleep_for(1s);
    broker.restart();
    // Appends issued during the outage either ride it out or fail (librdkafka 2.0.x can end
    // an idempotent producer with a fatal error after such an outage: kafka_log then puts
    // a new producer in its place). Appends go on without reopening the log.
    BOOST_TEST(a.wait_for_more(2000, 60s));
    a.stop();
    BOOST_TEST_MESSAGE("producers replaced: " << log.producers_replaced());
    BOOST_TEST_MESSAGE(a.failures_.size()
                       << " appends failed (" << a.maybe_stored_appends_ << " maybe stored)"
                       << (a.failures_.empty() ? "" : ": " + a.failures_[0]));
    acked = a.acknowledged_;
    not_stored = a.not_stored_;
  }
  // A fresh log (new producer and consumer) on the restarted broker.
  kafka_log log(o);
  check_acknowledged(log, acked, not_stored);
}

BOOST_AUTO_TEST_CASE(a_fatal_producer_error_fails_what_was_in_flight_and_a_new_producer_goes_on) {
  sandboxd::test::kafka_mock_cluster mock;
  mock.create_topic("fatal", 4);
  auto o = sandboxd::test::mock_cluster_log(mock.bootstrap(), "fatal", 4);
  std::map<std::string, record_position> acked;
  std::set<std::string> not_stored;
  {
    kafka_log log(o);
    appender a(log, 20);
    BOOST_REQUIRE(a.wait_for_more(2000, 60s));
    kafka_log_test_seam::inject_fatal_producer_error(log, "injected by the test");
    // Appends go on through a new producer, without reopening the log.
    BOOST_TEST(a.wait_for_more(2000, 60s));
    a.stop();
    BOOST_TEST(log.producers_replaced() == 1u);
    BOOST_TEST_MESSAGE(a.failures_.size()
                       << " appends failed (" << a.maybe_stored_appends_ << " maybe stored)"
                       << (a.failures_.empty() ? "" : ": " + a.failures_[0]));
    acked = a.acknowledged_;
    not_stored = a.not_stored_;
    // A single append after the replacement is acknowledged and readable.
    auto r = log.append({{"sb_after", "record-999999999"}}).get();
    BOOST_REQUIRE(r.ok());
    acked["record-999999999"] = r.positions[0];
  }
  kafka_log log(o);
  check_acknowledged(log, acked, not_stored);
}

// The broker answers later than the append time limit: the client gives up on a record it
// had sent, and the broker stores it all the same. The append fails as maybe_stored —
// never as "not stored", on which a caller would reuse the record's sequence number — and
// the record is in the partition afterwards, before the next acknowledged one.
BOOST_AUTO_TEST_CASE(an_append_that_timed_out_after_it_was_sent_is_maybe_stored_and_is_stored) {
  sandboxd::test::kafka_mock_cluster mock;
  mock.create_topic("slow", 1);
  mock.set_leader("slow", 0, 1);
  auto o = sandboxd::test::mock_cluster_log(mock.bootstrap(), "slow", 1);
  o.append_timeout = 1s;
  kafka_log log(o);
  auto first = log.append({{"sb_slow", "acknowledged before"}}).get();
  BOOST_REQUIRE_MESSAGE(first.ok(), first.failure->message);
  BOOST_REQUIRE(first.positions[0].offset == 0);
  mock.set_rtt(1, 3000);
  auto timed_out = log.append({{"sb_slow", "timed out, stored all the same"}}).get();
  BOOST_TEST_MESSAGE((timed_out.ok() ? std::string("ok") : timed_out.failure->message));
  BOOST_TEST(!timed_out.ok());
  BOOST_TEST(timed_out.maybe_stored);
  BOOST_TEST(timed_out.positions.empty());
  BOOST_TEST((!timed_out.ok() &&
              timed_out.failure->message.find("outcome is unknown") != std::string::npos));
  mock.set_rtt(1, 0);
  BOOST_REQUIRE(log.wait_for(0, 1, 30s));
  auto r = log.read(0, 1, 1);
  BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
  BOOST_REQUIRE(r.records.size() == 1u);
  BOOST_TEST(r.records[0].value == "timed out, stored all the same");
  // The log goes on after it: the next append is acknowledged at the next offset.
  auto next = log.append({{"sb_slow", "acknowledged after"}}).get();
  BOOST_TEST_MESSAGE((next.ok() ? std::string("ok") : next.failure->message));
  BOOST_REQUIRE_MESSAGE(next.ok(), next.failure->message);
  BOOST_TEST(next.positions[0].offset == 2);
}

// Right after a topic is made, or while a leader moves, a broker answers offset queries with
// errors that pass by themselves. The log asks again: end_offset and read succeed.
BOOST_AUTO_TEST_CASE(transient_broker_answers_to_offset_queries_are_retried_not_surfaced) {
  sandboxd::test::kafka_mock_cluster mock;
  mock.create_topic("flaky", 2);
  auto o = sandboxd::test::mock_cluster_log(mock.bootstrap(), "flaky", 2);
  o.append_timeout = 10s;
  kafka_log log(o);
  auto stored = log.append({{"sb_flaky", "one"}, {"sb_flaky", "two"}}).get();
  BOOST_REQUIRE_MESSAGE(stored.ok(), stored.failure->message);
  const auto p = stored.positions[0].partition;
  constexpr int k_list_offsets = 2; // the ListOffsets request
  for (int err :
       {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT}) {
    mock.push_request_errors(k_list_offsets, {err, err, err});
    auto end = log.end_offset(p);
    BOOST_TEST(end.ok(), rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(err))
                           << ": " << (end.ok() ? "" : end.failure->message));
    BOOST_TEST(end.offset == 2);
    mock.push_request_errors(k_list_offsets, {err, err, err});
    auto r = log.read(p, 0, 10);
    BOOST_TEST(r.ok(), rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(err))
                         << ": " << (r.ok() ? "" : r.failure->message));
    BOOST_TEST(r.records.size() == 2u);
  }
}

BOOST_AUTO_TEST_CASE(all_brokers_down_past_the_time_limit_fails_appends_and_none_is_durable) {
  sandboxd::test::kafka_mock_cluster mock;
  mock.create_topic("down", 4);
  auto o = sandboxd::test::mock_cluster_log(mock.bootstrap(), "down", 4);
  o.append_timeout = 3s;
  kafka_log log(o);
  BOOST_REQUIRE(log.append({{"sb_before", "stored"}}).get().ok());
  for (int b = 1; b <= mock.brokers(); ++b)
    mock.broker_down(b);
  std::vector<std::future<append_result>> futures;
  for (int i = 0; i < 20; ++i)
    futures.push_back(log.append({{"sb_" + std::to_string(i), "lost " + std::to_string(i)},
                                  {"sb_x" + std::to_string(i), "lost too"}}));
  std::size_t durable = 0, hung = 0, not_unavailable = 0, brokers_unnamed = 0, maybe = 0;
  std::string example;
  for (auto& f : futures) {
    // Liveness, not speed: the bound is 3 s; a hang would never complete.
    if (f.wait_for(120s) != std::future_status::ready) {
      ++hung;
      continue;
    }
    auto r = f.get();
    durable += r.ok();
    if (!r.ok()) {
      // Never sent (no broker was up), so certainly not stored.
      maybe += r.maybe_stored;
      not_unavailable += r.failure->code != errc::unavailable;
      brokers_unnamed += r.failure->message.find(mock.bootstrap()) == std::string::npos;
      example = r.failure->message;
    }
  }
  BOOST_TEST_MESSAGE(example);
  BOOST_TEST(hung == 0u);
  BOOST_TEST(durable == 0u);
  BOOST_TEST(maybe == 0u);
  BOOST_TEST(not_unavailable == 0u);
  BOOST_TEST(brokers_unnamed == 0u);
  // The brokers come back: the log works again.
  for (int b = 1; b <= mock.brokers(); ++b)
    mock.broker_up(b);
  // The producer reconnects with a backoff that can exceed the 3 s limit: the first
  // appends after the outage may still time out. Within a few limits one succeeds.
  append_result after;
  for (int attempt = 0; attempt < 10; ++attempt) {
    after = log.append({{"sb_after", "stored"}}).get();
    if (after.ok())
      break;
    BOOST_TEST_MESSAGE("after the outage: " << after.failure->message);
  }
  BOOST_TEST(after.ok());
  // What failed as not stored is not in the log.
  std::set<std::string> not_stored;
  for (int i = 0; i < 20; ++i)
    not_stored.insert("lost " + std::to_string(i));
  std::size_t found = 0;
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    // The reader's connections back off the same way: a read can time out before one is up.
    auto r = log.read(p, 0, 1000);
    for (int attempt = 0; !r.ok() && attempt < 10; ++attempt) {
      BOOST_TEST_MESSAGE("reading after the outage: " << r.failure->message);
      r = log.read(p, 0, 1000);
    }
    BOOST_REQUIRE_MESSAGE(r.ok(), r.failure->message);
    for (const auto& rec : r.records)
      found += not_stored.count(rec.value) + (rec.value == "lost too");
  }
  BOOST_TEST(found == 0u);
}
