#include "events/partitioner.hpp"

#include <librdkafka/rdkafka.h>

#include <stdexcept>
#include <string>

namespace sandboxd::events {

std::int32_t partition_for(std::string_view key, std::int32_t partitions) {
  if (partitions <= 0)
    throw std::invalid_argument("partition_for: the partition count must be positive, not " +
                                std::to_string(partitions));
  // The same function librdkafka's murmur2_random partitioner calls for a keyed message;
  // its topic argument is unused.
  return rd_kafka_msg_partitioner_murmur2(nullptr, key.data(), key.size(), partitions, nullptr,
                                          nullptr);
}

} // namespace sandboxd::events
