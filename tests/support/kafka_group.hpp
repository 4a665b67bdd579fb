// A member of a Kafka consumer group for tests of fenced appends (kafka_log_options'
// transactional_id and group_metadata): a consumer subscribed to a topic, polled on its own
// thread, whose assigned partitions are paused (it only holds membership, it reads nothing),
// and whose serialized group metadata is what a fenced kafka_log commits with.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::test {

class kafka_group_member {
public:
  // `instance_id` non-empty: static membership (group.instance.id).
  kafka_group_member(const std::string& bootstrap, const std::string& group,
                     const std::string& topic, const std::string& instance_id = "",
                     std::chrono::milliseconds session_timeout = std::chrono::seconds(6));
  ~kafka_group_member();
  kafka_group_member(const kafka_group_member&) = delete;
  kafka_group_member& operator=(const kafka_group_member&) = delete;

  // The serialized rd_kafka_consumer_group_metadata as of the last assignment; "" before the
  // first one. Thread-safe.
  std::string metadata() const;
  // How many assignments this member got so far (each one a new generation).
  std::uint64_t generations() const;
  // Waits until generations() > `seen`; false after `timeout`.
  bool wait_generation_after(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  std::vector<std::int32_t> assignment() const;
  // Closes the consumer (LeaveGroup): the member is gone from the group.
  void leave();

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::test
