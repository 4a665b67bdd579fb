#include "tests/support/kafka_broker.hpp"

#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <librdkafka/rdkafka.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <signal.h>
#include <stdexcept>
#include <unistd.h>

namespace sandboxd::test {

namespace {

std::string script() {
  return shell_quote(source_dir() + "/scripts/kafka-broker");
}

std::string last_line(const std::string& s) {
  auto end = s.find_last_not_of("\n");
  if (end == std::string::npos)
    return {};
  auto begin = s.rfind('\n', end);
  return s.substr(begin == std::string::npos ? 0 : begin + 1,
                  end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

} // namespace

std::string shared_kafka_bootstrap() {
  if (const char* bin = std::getenv("SANDBOXD_BINARY_DIR")) {
    std::ifstream in(std::string(bin) + "/kafka-broker/bootstrap");
    std::string line;
    if (in && std::getline(in, line) && !line.empty())
      return line;
  }
  static kafka_broker own; // outside ctest's fixture: one broker for this process
  return own.bootstrap();
}

kafka_broker::kafka_broker() {
  temp_dir tmp("kafka");
  dir_ = tmp.release();
  guardian_ = std::make_unique<guardian>(script() + " stop " + shell_quote(dir_));
  auto out = check_shell(script() + " start " + shell_quote(dir_) + " 2>/dev/null");
  bootstrap_ = last_line(out);
  if (bootstrap_.empty())
    throw std::runtime_error("kafka-broker printed no bootstrap servers");
}

kafka_broker::~kafka_broker() {
  resume();
  guardian_.reset();
}

pid_t kafka_broker::pid() const {
  std::ifstream in(dir_ + "/pid");
  pid_t p = -1;
  in >> p;
  return p;
}

void kafka_broker::suspend() {
  ::kill(pid(), SIGSTOP);
}

void kafka_broker::resume() {
  ::kill(pid(), SIGCONT);
}

void kafka_broker::kill() {
  resume();
  check_shell(script() + " kill " + shell_quote(dir_));
}

void kafka_broker::restart() {
  check_shell(script() + " restart " + shell_quote(dir_) + " 2>/dev/null");
}

namespace {

using admin_client = std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)>;

admin_client connect(const std::string& bootstrap) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err) !=
      RD_KAFKA_CONF_OK)
    throw std::runtime_error(err);
  admin_client rk(rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err), &rd_kafka_destroy);
  if (!rk)
    throw std::runtime_error(std::string("rd_kafka_new: ") + err);
  return rk;
}

// Sends one admin request through `send` and returns its result event (the caller
// destroys it); throws naming `what` when there is no answer within 60 s or it is an error.
rd_kafka_event_t*
admin_request(rd_kafka_t* rk, rd_kafka_admin_op_t op, const std::string& what,
              const std::function<void(rd_kafka_AdminOptions_t*, rd_kafka_queue_t*)>& send) {
  char err[512];
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, op);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 30000, err, sizeof err);
  send(opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 60000);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(q);
  std::string failure;
  if (ev == nullptr)
    failure = "no answer in 60 s";
  else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR)
    failure = rd_kafka_event_error_string(ev);
  if (!failure.empty()) {
    if (ev)
      rd_kafka_event_destroy(ev);
    throw std::runtime_error(what + ": " + failure);
  }
  return ev;
}

} // namespace

void create_topic(const std::string& bootstrap, const std::string& topic, int partitions,
                  int replication_factor,
                  const std::vector<std::pair<std::string, std::string>>& configs) {
  char err[512];
  const std::string what = "create topic " + topic + " on " + bootstrap;
  auto rk = connect(bootstrap);
  rd_kafka_NewTopic_t* nt =
    rd_kafka_NewTopic_new(topic.c_str(), partitions, replication_factor, err, sizeof err);
  if (nt == nullptr)
    throw std::runtime_error(what + ": " + err);
  for (const auto& [name, value] : configs)
    rd_kafka_NewTopic_set_config(nt, name.c_str(), value.c_str());
  rd_kafka_event_t* ev;
  try {
    ev = admin_request(rk.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS, what,
                       [&](rd_kafka_AdminOptions_t* opts, rd_kafka_queue_t* q) {
                         rd_kafka_CreateTopics(rk.get(), &nt, 1, opts, q);
                       });
  } catch (...) {
    rd_kafka_NewTopic_destroy(nt);
    throw;
  }
  rd_kafka_NewTopic_destroy(nt);
  std::string failure;
  const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
  size_t n = 0;
  const rd_kafka_topic_result_t** results = rd_kafka_CreateTopics_result_topics(res, &n);
  for (size_t i = 0; i < n; ++i) {
    auto e = rd_kafka_topic_result_error(results[i]);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
      failure = rd_kafka_err2str(e) + std::string(": ") +
                (rd_kafka_topic_result_error_string(results[i]) ?: "");
  }
  rd_kafka_event_destroy(ev);
  if (!failure.empty())
    throw std::runtime_error(what + ": " + failure);
}

std::map<std::string, std::string> topic_configs(const std::string& bootstrap,
                                                 const std::string& topic) {
  const std::string what = "describe the configs of topic " + topic + " on " + bootstrap;
  auto rk = connect(bootstrap);
  rd_kafka_ConfigResource_t* resource =
    rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_event_t* ev;
  try {
    ev = admin_request(rk.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, what,
                       [&](rd_kafka_AdminOptions_t* opts, rd_kafka_queue_t* q) {
                         rd_kafka_DescribeConfigs(rk.get(), &resource, 1, opts, q);
                       });
  } catch (...) {
    rd_kafka_ConfigResource_destroy(resource);
    throw;
  }
  rd_kafka_ConfigResource_destroy(resource);
  std::map<std::string, std::string> out;
  size_t n = 0;
  const auto** resources =
    rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
  std::string failure = n == 1 ? "" : "no description in the answer";
  if (n == 1 && rd_kafka_ConfigResource_error(resources[0]) != RD_KAFKA_RESP_ERR_NO_ERROR)
    failure = rd_kafka_err2str(rd_kafka_ConfigResource_error(resources[0]));
  if (failure.empty()) {
    size_t count = 0;
    const auto** entries = rd_kafka_ConfigResource_configs(resources[0], &count);
    for (size_t i = 0; i < count; ++i)
      out[rd_kafka_ConfigEntry_name(entries[i])] = rd_kafka_ConfigEntry_value(entries[i]) ?: "";
  }
  rd_kafka_event_destroy(ev);
  if (!failure.empty())
    throw std::runtime_error(what + ": " + failure);
  return out;
}

} // namespace sandboxd::test
