// log_budget — how many bytes each tenant has put into the event log in the last hour, for
// the tenant's log quota. Every field a tenant sends is bounded (input_limits.hpp), but not
// how often it sends one: without a budget one tenant could fill the node's log disk, which
// is outside every sandbox quota, with execs of large arguments.
//
// The truth is the log: spend() is called for every record the log follower reads, with the
// record's size and its event's time, so a restart folds the same history into the same
// budget. The window is the last 60 whole minutes (one counter per minute, per tenant): what
// a tenant wrote more than an hour ago no longer counts. used() and admit() take the time of
// the question. Pure; not thread-safe (tenant_ledger guards it).
#pragma once

#include "api/result.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace sandboxd::api {

class log_budget {
public:
  using time_point = std::chrono::system_clock::time_point;
  static constexpr std::size_t k_minutes = 60;

  // Counts `bytes` of a record of `tenant` written at `at`. A record older than the window
  // (as of the newest one seen for the tenant) counts for nothing.
  void spend(const std::string& tenant, std::uint64_t bytes, time_point at);

  // The bytes `tenant` wrote in the hour before `now`.
  std::uint64_t used(const std::string& tenant, time_point now) const;

  // Admits one more request of `tenant` while it has written less than `mib_per_hour` MiB in
  // the last hour (0: no budget); else resource_exhausted naming the budget and the wait.
  result<void> admit(const std::string& tenant, std::uint64_t mib_per_hour, time_point now) const;

private:
  struct window {
    std::array<std::uint64_t, k_minutes> bytes{};
    std::array<std::int64_t, k_minutes> minute{}; // which minute each slot holds
  };
  std::unordered_map<std::string, window> tenants_;
};

} // namespace sandboxd::api
