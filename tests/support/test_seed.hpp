// test_seed — the seed of a randomized test: taken from SANDBOXD_TEST_SEED when set (to
// replay a failure), otherwise fresh; printed either way, so every failing run can be
// repeated exactly.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace sandboxd::test {

// The seed for the randomized test `what`, printed as
// "sandboxd-test: <what> seed <n> (rerun with SANDBOXD_TEST_SEED=<n>)".
inline std::uint64_t test_seed(const std::string& what) {
  std::uint64_t seed = 0;
  if (const char* env = std::getenv("SANDBOXD_TEST_SEED"); env && *env) {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    std::random_device rd;
    seed = (std::uint64_t{rd()} << 32) ^ rd();
  }
  std::printf("sandboxd-test: %s seed %llu (rerun with SANDBOXD_TEST_SEED=%llu)\n", what.c_str(),
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

} // namespace sandboxd::test
