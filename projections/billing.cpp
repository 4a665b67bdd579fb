#include "projections/billing.hpp"

#include <algorithm>
#include <stdexcept>

namespace sandboxd::projections {

std::vector<hour_usage> split_by_hour(int64_t start_ms, int64_t end_ms, int64_t bytes) {
  std::vector<hour_usage> out;
  if (end_ms <= start_ms || bytes == 0)
    return out;
  for (int64_t h = hour_of(start_ms); h < end_ms; h += ms_per_hour) {
    int64_t from = std::max(start_ms, h);
    int64_t to = std::min(end_ms, h + ms_per_hour);
    __int128 v = static_cast<__int128>(bytes) * (to - from);
    if (v > INT64_MAX)
      throw std::overflow_error("billing: more than 2^63 byte-milliseconds in one hour (" +
                                std::to_string(bytes) + " bytes)");
    out.push_back({h, static_cast<int64_t>(v)});
  }
  return out;
}

namespace {

int64_t price(usage_t usage, int64_t rate, __int128 denominator) {
  if (usage < 0)
    throw std::invalid_argument("billing: negative usage cannot be priced");
  __int128 numerator = usage * rate;
  __int128 rounded = (2 * numerator + denominator) / (2 * denominator);
  if (rounded > INT64_MAX)
    throw std::overflow_error("billing: amount exceeds int64 micro-dollars");
  return static_cast<int64_t>(rounded);
}

} // namespace

int64_t price_compute(usage_t byte_ms, const billing_rates& rates) {
  return price(byte_ms, rates.compute_micro_usd_per_gib_hour,
               static_cast<__int128>(bytes_per_gib) * ms_per_hour);
}

int64_t price_storage(usage_t byte_ms, const billing_rates& rates) {
  return price(byte_ms, rates.storage_micro_usd_per_gib_month,
               static_cast<__int128>(bytes_per_gib) * rates.storage_month_hours * ms_per_hour);
}

std::string format_dollars(int64_t micro_usd) {
  bool neg = micro_usd < 0;
  uint64_t v = neg ? -static_cast<uint64_t>(micro_usd) : static_cast<uint64_t>(micro_usd);
  std::string frac = std::to_string(v % 1'000'000);
  frac.insert(0, 6 - frac.size(), '0');
  return (neg ? "-" : "") + std::to_string(v / 1'000'000) + "." + frac;
}

std::string usage_to_string(usage_t v) {
  if (v == 0)
    return "0";
  bool neg = v < 0;
  unsigned __int128 u =
    neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  while (u > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (neg)
    s.push_back('-');
  return {s.rbegin(), s.rend()};
}

usage_t parse_usage(const std::string& s) {
  size_t i = 0;
  bool neg = !s.empty() && s[0] == '-';
  if (neg)
    i = 1;
  if (i == s.size())
    throw std::invalid_argument("not an integer: '" + s + "'");
  usage_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9')
      throw std::invalid_argument("not an integer: '" + s + "'");
    v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}

} // namespace sandboxd::projections
