// billing — the pure arithmetic of the billing meters: exact integer usage, split by hour,
// priced in integer micro-dollars.
//
// Units. Usage is counted in byte-milliseconds: bytes (memory limit for compute,
// writable-layer size for storage) times the milliseconds of an interval. Event times are
// nanoseconds; they are truncated to whole milliseconds before metering, so an interval
// [start, end) lasts floor(end/1e6) - floor(start/1e6) ms and intervals that touch add up
// exactly. One hour bucket of one sandbox fits int64 up to 2.5 TiB held for the hour;
// totals over many hours are __int128 (numeric in PostgreSQL), never rounded.
//
// Pricing happens once per report line (one sandbox, one meter, one period), never per hour:
//   compute micro-dollars = usage × compute_rate / (2^30 bytes × 3,600,000 ms)
//   storage micro-dollars = usage × storage_rate / (2^30 bytes × month_hours × 3,600,000 ms)
// rounded half up to a whole micro-dollar. A bill is the sum of its rounded lines.
// Defaults are the published example: 15,000 µ$ per GiB-hour of compute (0.015 $) and
// 20,000 µ$ per GiB-month of 730 hours of storage (0.02 $).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sandboxd::projections {

using usage_t = __int128; // byte-milliseconds, summed over any period

constexpr int64_t bytes_per_gib = int64_t{1} << 30;
constexpr int64_t ms_per_hour = 3'600'000;

struct billing_rates {
  int64_t compute_micro_usd_per_gib_hour = 15'000;
  int64_t storage_micro_usd_per_gib_month = 20'000;
  int64_t storage_month_hours = 730;
};

// Event time (ns since the epoch) to the metering clock (whole ms, truncated toward
// negative infinity).
constexpr int64_t metering_ms(int64_t ns) {
  return ns >= 0 ? ns / 1'000'000 : -((-ns + 999'999) / 1'000'000);
}

// The start (ms) of the hour that holds `ms`.
constexpr int64_t hour_of(int64_t ms) {
  int64_t h = ms >= 0 ? ms / ms_per_hour : -((-ms + ms_per_hour - 1) / ms_per_hour);
  return h * ms_per_hour;
}

struct hour_usage {
  int64_t hour_start_ms = 0;
  int64_t byte_ms = 0;
  bool operator==(const hour_usage&) const = default;
};

// Usage of `bytes` held over [start_ms, end_ms), one entry per hour it touches (empty when
// end_ms <= start_ms or bytes is 0). The entries add up to bytes × (end_ms - start_ms).
std::vector<hour_usage> split_by_hour(int64_t start_ms, int64_t end_ms, int64_t bytes);

// Micro-dollars for compute usage, rounded half up.
int64_t price_compute(usage_t byte_ms, const billing_rates& rates = {});
// Micro-dollars for storage usage, rounded half up.
int64_t price_storage(usage_t byte_ms, const billing_rates& rates = {});

// "1.000000" style dollars for a micro-dollar amount.
std::string format_dollars(int64_t micro_usd);

// Decimal text of a usage (PostgreSQL numeric output) and back. parse_usage throws
// std::invalid_argument for anything but an optional '-' and digits.
std::string usage_to_string(usage_t v);
usage_t parse_usage(const std::string& s);

} // namespace sandboxd::projections
