// partitioner.hpp — which partition a key's records live in.
//
// partition_for(key, n) is (murmur2(key) & 0x7fffffff) % n: what Kafka's Java client
// (DefaultPartitioner, BuiltInPartitioner.partitionForKey) and librdkafka's `murmur2` and
// `murmur2_random` partitioners compute for a non-empty key. Both event log
// implementations use it, so a sandbox's events land in the same partition whether they
// are stored by file_log or by Kafka, and a node can tell which partition (and so which
// owner) a sandbox id belongs to without asking the log.
#pragma once

#include <cstdint>
#include <string_view>

namespace sandboxd::events {

// The partition of `key` among `partitions` (> 0).
std::int32_t partition_for(std::string_view key, std::int32_t partitions);

} // namespace sandboxd::events
