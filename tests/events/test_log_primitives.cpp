// The event log's building blocks: CRC-32C against its published check values, and the
// partitioner against the values Kafka's Java client computes.
#define BOOST_TEST_MODULE log_primitives
#include <boost/test/unit_test.hpp>

#include "base/crc32c.hpp"
#include "events/partitioner.hpp"
#include "tests/support/test_seed.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace sandboxd::events;
using sandboxd::crc32c;
using sandboxd::crc32c_extend;
using sandboxd::crc32c_extend_portable;

BOOST_AUTO_TEST_CASE(crc32c_matches_the_published_check_values) {
  const std::string check = "123456789";
  BOOST_TEST(crc32c(check.data(), check.size()) == 0xE3069283u);
  // RFC 3720 (iSCSI), B.4: 32 bytes of zeros, and of 0xff.
  const std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff);
  BOOST_TEST(crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);
  BOOST_TEST(crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
  BOOST_TEST(crc32c("", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(crc32c_hardware_and_table_agree_and_extend_in_pieces) {
  std::mt19937_64 rng(sandboxd::test::test_seed("crc32c data"));
  std::string data(10000, '\0');
  for (auto& c : data)
    c = static_cast<char>(rng());
  std::size_t disagreements = 0, split_mismatches = 0;
  for (std::size_t len : {0ul, 1ul, 7ul, 8ul, 9ul, 63ul, 64ul, 1000ul, 9999ul}) {
    for (std::size_t start : {0ul, 1ul, 3ul}) {
      const char* p = data.data() + start;
      const auto whole = crc32c(p, len);
      disagreements += whole != crc32c_extend_portable(0, p, len);
      const std::size_t cut = len / 3;
      split_mismatches += whole != crc32c_extend(crc32c(p, cut), p + cut, len - cut);
    }
  }
  BOOST_TEST(disagreements == 0u);
  BOOST_TEST(split_mismatches == 0u);
}

// Kafka's own test vectors for Utils.murmur2 (clients/src/test/.../UtilsTest.java); the
// Java client's partition for a key is toPositive(murmur2(key)) % partitions.
BOOST_AUTO_TEST_CASE(partition_for_matches_the_java_client) {
  const std::vector<std::pair<std::string, std::int32_t>> java = {
    {"21", -973932308},
    {"foobar", -790332482},
    {"a-little-bit-long-string", -985981536},
    {"a-little-bit-longer-string", -1486304829},
    {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
    {"abc", 479470107},
  };
  std::size_t wrong = 0;
  for (const auto& [key, hash] : java)
    for (std::int32_t n : {1, 2, 3, 8, 12, 64, 1000}) {
      const std::int32_t expected = (hash & 0x7fffffff) % n;
      wrong += partition_for(key, n) != expected;
    }
  BOOST_TEST(wrong == 0u);
}

BOOST_AUTO_TEST_CASE(partition_for_spreads_sandbox_ids_over_all_partitions) {
  std::vector<int> count(8, 0);
  for (int i = 0; i < 8000; ++i)
    ++count[partition_for("sb_" + std::to_string(i), 8)];
  for (int c : count)
    BOOST_TEST((c > 800 && c < 1200)); // murmur2 is uniform: about 1000 each
}

BOOST_AUTO_TEST_CASE(partition_for_refuses_a_partition_count_below_one) {
  BOOST_CHECK_THROW(partition_for("sb_1", 0), std::invalid_argument);
}
