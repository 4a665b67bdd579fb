// kafka_mock_cluster — librdkafka's in-process mock cluster (rdkafka_mock.h), for
// fault injection: brokers taken down and up, request errors pushed. Any client in
// this process or another can connect to bootstrap(). It does not model transactions
// or the admin API (see ../shared/notes): topics are created with create_topic().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

struct rd_kafka_s;
struct rd_kafka_mock_cluster_s;

namespace sandboxd::test {

class kafka_mock_cluster {
public:
  explicit kafka_mock_cluster(int brokers = 3);
  ~kafka_mock_cluster();
  kafka_mock_cluster(const kafka_mock_cluster&) = delete;
  kafka_mock_cluster& operator=(const kafka_mock_cluster&) = delete;

  std::string bootstrap() const;
  int brokers() const { return brokers_; }

  void create_topic(const std::string& topic, int partitions, int replication_factor = 3);
  // Broker ids are 1..brokers().
  void broker_down(int32_t broker_id);
  void broker_up(int32_t broker_id);
  // Every answer of the broker is held back this long (librdkafka's mock applies it to the
  // responses: a produce request is stored at once and acknowledged `rtt_ms` later).
  void set_rtt(int32_t broker_id, int rtt_ms);
  // The leader broker of a partition.
  void set_leader(const std::string& topic, int32_t partition, int32_t broker_id);
  // The next requests of `api_key` (RD_KAFKAP_*, e.g. 0 = Produce) fail with these
  // error codes, one each, in order.
  void push_request_errors(int16_t api_key, std::initializer_list<int> errors);

  rd_kafka_mock_cluster_s* handle() const { return cluster_; }

private:
  int brokers_;
  rd_kafka_s* rk_ = nullptr;
  rd_kafka_mock_cluster_s* cluster_ = nullptr;
};

} // namespace sandboxd::test
