// log_under_test — a fresh, empty event log for one projection test: file_log in a
// temporary directory, or, with SANDBOXD_LOG_UNDER_TEST=kafka in the environment (the ctest
// entry test_read_models_kafka; one binary serves both entries), kafka_log on a new topic of
// the real broker that the ctest fixture `kafka_broker` runs.
#pragma once

#include "events/file_log.hpp"
#include "events/kafka_log.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

namespace sandboxd::test {

constexpr int k_log_partitions = 4;

class log_under_test {
public:
  log_under_test() {
    static std::atomic<int> n{0};
    name_ = "p" + std::to_string(::getpid()) + "_" + std::to_string(n++);
    const char* which = std::getenv("SANDBOXD_LOG_UNDER_TEST");
    if (!which || std::string(which) != "kafka") {
      dir_.emplace("projection-log");
      events::file_log_options o;
      o.dir = dir_->path() + "/log";
      o.partitions = k_log_partitions;
      log_ = std::make_unique<events::file_log>(o);
      return;
    }
    events::kafka_log_options o;
    o.bootstrap_servers = shared_kafka_bootstrap();
    o.topic = "projections-" + name_;
    o.partitions = k_log_partitions;
    o.replication_factor = 1;
    o.min_insync_replicas = 1; // a single broker
    // Two readers of one partition (two projectors, a rebuild beside a projector) make the
    // log's reader restart, and a restart waits out the broker's fetch round: 5 ms here, not
    // the 100 ms default (test_read_models_kafka took 94 s with it, 20 of them in one case).
    o.fetch_wait = std::chrono::milliseconds(5);
    log_ = std::make_unique<events::kafka_log>(o);
  }

  events::event_log& operator*() { return *log_; }
  events::event_log* operator->() { return log_.get(); }
  // A name unique to this log, for schemas.
  const std::string& name() const { return name_; }

private:
  std::optional<temp_dir> dir_;
  std::unique_ptr<events::event_log> log_;
  std::string name_;
};

} // namespace sandboxd::test
