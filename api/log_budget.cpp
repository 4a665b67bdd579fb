#include "api/log_budget.hpp"

namespace sandboxd::api {
namespace {

std::int64_t minute_of(log_budget::time_point t) {
  return std::chrono::duration_cast<std::chrono::minutes>(t.time_since_epoch()).count();
}

std::size_t slot_of(std::int64_t minute) {
  const auto n = static_cast<std::int64_t>(log_budget::k_minutes);
  return static_cast<std::size_t>(((minute % n) + n) % n);
}

} // namespace

void log_budget::spend(const std::string& tenant, std::uint64_t bytes, time_point at) {
  auto& w = tenants_[tenant];
  const auto m = minute_of(at);
  const auto i = slot_of(m);
  if (w.minute[i] == m) {
    w.bytes[i] += bytes;
  } else if (w.minute[i] < m || w.bytes[i] == 0) {
    // The slot held a minute an hour or more before this one (or nothing): it starts over.
    w.minute[i] = m;
    w.bytes[i] = bytes;
  } // else: older than the window as of the newest record: counts for nothing
}

std::uint64_t log_budget::used(const std::string& tenant, time_point now) const {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end())
    return 0;
  const auto m = minute_of(now);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < k_minutes; ++i)
    if (it->second.minute[i] > m - static_cast<std::int64_t>(k_minutes) &&
        it->second.minute[i] <= m)
      sum += it->second.bytes[i];
  return sum;
}

result<void> log_budget::admit(const std::string& tenant, std::uint64_t mib_per_hour,
                               time_point now) const {
  if (mib_per_hour == 0)
    return {};
  const auto u = used(tenant, now);
  const auto limit = mib_per_hour << 20;
  if (u < limit)
    return {};
  return make_error(errc::resource_exhausted,
                    "tenant " + tenant + " has put " + std::to_string(u >> 20) +
                      " MiB into the event log in the last hour, its budget is " +
                      std::to_string(mib_per_hour) +
                      " MiB per hour; wait for older records to leave the hour, send smaller "
                      "requests, or ask the operator for a larger --quota-log-mib-per-hour");
}

} // namespace sandboxd::api
