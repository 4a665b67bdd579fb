// kafka_log_test_seam.hpp — for tests only, not part of kafka_log's interface: faults that
// a test injects into a kafka_log from outside.
#pragma once

#include "events/kafka_log.hpp"

#include <string>

namespace sandboxd::events {

struct kafka_log_test_seam {
  // Fails the log's producer as a fatal idempotence error does (rd_kafka_test_fatal_error):
  // the log must fail what the producer held and put a new producer in its place.
  static void inject_fatal_producer_error(kafka_log& log, const std::string& reason);
};

} // namespace sandboxd::events
