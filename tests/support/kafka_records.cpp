#include "tests/support/kafka_records.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace sandboxd::test {

namespace {

rd_kafka_conf_t* make_conf(const std::string& bootstrap,
                           std::initializer_list<std::pair<const char*, std::string>> kv) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const char* k, const std::string& v) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(std::string("kafka config ") + k + ": " + err);
    }
  };
  set("bootstrap.servers", bootstrap);
  set("log_level", "3");
  for (auto& [k, v] : kv)
    set(k, v);
  return conf;
}

struct delivery_state {
  std::mutex mu;
  std::vector<kafka_record> delivered;
  std::string first_error;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* st = static_cast<delivery_state*>(opaque);
  std::lock_guard<std::mutex> lock(st->mu);
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (st->first_error.empty())
      st->first_error = rd_kafka_err2str(m->err);
    return;
  }
  kafka_record r;
  r.key.assign(static_cast<const char*>(m->key), m->key_len);
  r.value.assign(static_cast<const char*>(m->payload), m->len);
  r.partition = m->partition;
  r.offset = m->offset;
  st->delivered.push_back(std::move(r));
}

} // namespace

std::vector<kafka_record> produce_all(const std::string& bootstrap, const std::string& topic,
                                      const std::vector<kafka_record>& records,
                                      const produce_options& options) {
  delivery_state st;
  rd_kafka_conf_t* conf = make_conf(bootstrap, {{"enable.idempotence", "true"},
                                                {"acks", "all"},
                                                {"partitioner", "murmur2_random"},
                                                {"linger.ms", "5"},
                                                {"message.timeout.ms", "120000"}});
  rd_kafka_conf_set_dr_msg_cb(conf, &on_delivery);
  rd_kafka_conf_set_opaque(conf, &st);
  char err[512];
  std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> rk(
    rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err), &rd_kafka_destroy);
  if (!rk)
    throw std::runtime_error(std::string("producer: ") + err);

  size_t n = 0;
  for (const auto& r : records) {
    for (;;) {
      auto e = rd_kafka_producev(
        rk.get(), RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(r.key.data(), r.key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk.get(), 10);
        continue;
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw std::runtime_error(std::string("produce: ") + rd_kafka_err2str(e));
      break;
    }
    rd_kafka_poll(rk.get(), 0);
    if (options.progress && ++n % options.every == 0)
      options.progress(n);
  }
  auto e = rd_kafka_flush(rk.get(), 180000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error(std::string("flush: ") + rd_kafka_err2str(e));
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.first_error.empty())
    throw std::runtime_error("delivery failed: " + st.first_error);
  return std::move(st.delivered);
}

std::vector<kafka_record> consume_group(const std::string& bootstrap, const std::string& topic,
                                        size_t count, std::chrono::seconds timeout,
                                        std::chrono::milliseconds linger) {
  static std::atomic<int> groups{0};
  std::string group = "sandboxd-test-" + topic + "-" + std::to_string(groups++);
  rd_kafka_conf_t* conf = make_conf(bootstrap, {{"group.id", group},
                                                {"auto.offset.reset", "earliest"},
                                                {"enable.auto.commit", "true"},
                                                {"enable.partition.eof", "false"}});
  char err[512];
  std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)> rk(
    rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err), &rd_kafka_destroy);
  if (!rk)
    throw std::runtime_error(std::string("consumer: ") + err);
  rd_kafka_poll_set_consumer(rk.get());
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
  auto e = rd_kafka_subscribe(rk.get(), topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error(std::string("subscribe: ") + rd_kafka_err2str(e));

  std::vector<kafka_record> out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool lingering = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!lingering && out.size() >= count) {
      lingering = true;
      deadline = std::min(deadline, std::chrono::steady_clock::now() + linger);
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 200);
    if (m == nullptr)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      kafka_record r;
      r.key.assign(static_cast<const char*>(m->key), m->key_len);
      r.value.assign(static_cast<const char*>(m->payload), m->len);
      r.partition = m->partition;
      r.offset = m->offset;
      out.push_back(std::move(r));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk.get());
  return out;
}

} // namespace sandboxd::test
