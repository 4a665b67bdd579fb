#include "tests/support/kafka_mock.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <stdexcept>
#include <vector>

namespace sandboxd::test {

namespace {

void check(rd_kafka_resp_err_t e, const std::string& what) {
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("mock cluster: " + what + ": " + rd_kafka_err2str(e));
}

} // namespace

kafka_mock_cluster::kafka_mock_cluster(int brokers) : brokers_(brokers) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto n = std::to_string(brokers);
  if (rd_kafka_conf_set(conf, "test.mock.num.brokers", n.c_str(), err, sizeof err) !=
      RD_KAFKA_CONF_OK)
    throw std::runtime_error(err);
  rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk_ == nullptr)
    throw std::runtime_error(std::string("mock cluster: ") + err);
  cluster_ = rd_kafka_handle_mock_cluster(rk_);
  if (cluster_ == nullptr) {
    rd_kafka_destroy(rk_);
    throw std::runtime_error("mock cluster: librdkafka made no mock cluster");
  }
}

kafka_mock_cluster::~kafka_mock_cluster() {
  rd_kafka_destroy(rk_); // owns the cluster
}

std::string kafka_mock_cluster::bootstrap() const {
  return rd_kafka_mock_cluster_bootstraps(cluster_);
}

void kafka_mock_cluster::create_topic(const std::string& topic, int partitions,
                                      int replication_factor) {
  check(rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, replication_factor),
        "create topic " + topic);
}

void kafka_mock_cluster::broker_down(int32_t broker_id) {
  check(rd_kafka_mock_broker_set_down(cluster_, broker_id), "broker down");
}

void kafka_mock_cluster::broker_up(int32_t broker_id) {
  check(rd_kafka_mock_broker_set_up(cluster_, broker_id), "broker up");
}

void kafka_mock_cluster::set_rtt(int32_t broker_id, int rtt_ms) {
  check(rd_kafka_mock_broker_set_rtt(cluster_, broker_id, rtt_ms), "set rtt");
}

void kafka_mock_cluster::set_leader(const std::string& topic, int32_t partition,
                                    int32_t broker_id) {
  check(rd_kafka_mock_partition_set_leader(cluster_, topic.c_str(), partition, broker_id),
        "set leader");
}

void kafka_mock_cluster::push_request_errors(int16_t api_key, std::initializer_list<int> errors) {
  std::vector<rd_kafka_resp_err_t> errs;
  for (int e : errors)
    errs.push_back(static_cast<rd_kafka_resp_err_t>(e));
  rd_kafka_mock_push_request_errors_array(cluster_, api_key, errs.size(), errs.data());
}

} // namespace sandboxd::test
