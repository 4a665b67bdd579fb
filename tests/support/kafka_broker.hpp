// Real Apache Kafka brokers for integration tests (scripts/kafka-broker: KRaft, one
// node, loopback). Most tests share the broker that the ctest fixture `kafka_broker`
// starts once per test run; fault tests start a private one they may stop and kill.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace sandboxd::test {

class guardian;

// Bootstrap servers of the broker shared by the whole test run: the ctest fixture's
// (SANDBOXD_BINARY_DIR/kafka-broker/bootstrap), or, when a test binary runs outside
// ctest, a private broker started on first use for the life of the process.
std::string shared_kafka_bootstrap();

// A broker owned by one test. Stopped and removed when destroyed, or by a guardian
// when the test process dies.
class kafka_broker {
public:
  kafka_broker();
  ~kafka_broker();
  kafka_broker(const kafka_broker&) = delete;
  kafka_broker& operator=(const kafka_broker&) = delete;

  const std::string& bootstrap() const { return bootstrap_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const;

  void suspend(); // SIGSTOP: the broker hangs, connections stay open
  void resume();  // SIGCONT
  void kill();    // SIGKILL; the data directory stays
  void restart(); // start again on the same data directory and ports

private:
  std::string dir_;
  std::string bootstrap_;
  std::unique_ptr<guardian> guardian_;
};

// Creates a topic through librdkafka's admin API, with these topic configs, and waits until
// it exists. Throws std::runtime_error naming the topic and the broker's error.
void create_topic(const std::string& bootstrap, const std::string& topic, int partitions,
                  int replication_factor = 1,
                  const std::vector<std::pair<std::string, std::string>>& configs = {});

// The configs of a topic as the broker describes them (DescribeConfigs), by name.
// Throws std::runtime_error naming the topic and the broker's error.
std::map<std::string, std::string> topic_configs(const std::string& bootstrap,
                                                 const std::string& topic);

} // namespace sandboxd::test
