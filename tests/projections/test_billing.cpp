// Billing arithmetic: the published example to the micro-dollar, hour splitting that adds
// up exactly, and the rounding rule.
#define BOOST_TEST_MODULE billing
#include <boost/test/unit_test.hpp>

#include "projections/billing.hpp"

#include <numeric>

using namespace sandboxd::projections;

namespace {

constexpr int64_t gib = bytes_per_gib;
constexpr int64_t hour = ms_per_hour;

usage_t total(const std::vector<hour_usage>& v) {
  usage_t t = 0;
  for (const auto& h : v)
    t += h.byte_ms;
  return t;
}

} // namespace

BOOST_AUTO_TEST_CASE(published_example_bills_one_dollar) {
  // A 4 GiB sandbox running 10 hours, starting mid-hour so the usage spans 11 buckets.
  int64_t start = 1'700'000'000'000 + 17 * 60'000;
  auto compute = split_by_hour(start, start + 10 * hour, 4 * gib);
  BOOST_TEST(compute.size() == 11u);
  int64_t compute_micro = price_compute(total(compute));
  BOOST_TEST(compute_micro == 600'000);
  BOOST_TEST(format_dollars(compute_micro) == "0.600000");

  // 20 GiB of writable layer kept 730 hours (a month), from creation: its 10 running hours
  // and 720 paused.
  auto storage = split_by_hour(start, start + 730 * hour, 20 * gib);
  BOOST_TEST(storage.size() == 731u);
  int64_t storage_micro = price_storage(total(storage));
  BOOST_TEST(storage_micro == 400'000);
  BOOST_TEST(format_dollars(storage_micro) == "0.400000");

  BOOST_TEST(format_dollars(compute_micro + storage_micro) == "1.000000");
}

BOOST_AUTO_TEST_CASE(hour_split_adds_up_to_the_interval) {
  int64_t start = 5 * hour - 1;
  int64_t end = 8 * hour + 1234;
  auto v = split_by_hour(start, end, 3);
  BOOST_REQUIRE(v.size() == 5u);
  BOOST_TEST(v.front().hour_start_ms == 4 * hour);
  BOOST_TEST(v.front().byte_ms == 3);
  BOOST_TEST(v.back().hour_start_ms == 8 * hour);
  BOOST_TEST(v.back().byte_ms == 3 * 1234);
  BOOST_TEST(v[1].byte_ms == 3 * hour);
  BOOST_TEST(usage_to_string(total(v)) == usage_to_string(usage_t{3} * (end - start)));
}

BOOST_AUTO_TEST_CASE(empty_or_reversed_interval_has_no_usage) {
  BOOST_TEST(split_by_hour(10, 10, gib).empty());
  BOOST_TEST(split_by_hour(10, 5, gib).empty());
  BOOST_TEST(split_by_hour(0, hour, 0).empty());
}

BOOST_AUTO_TEST_CASE(event_times_truncate_to_whole_milliseconds) {
  BOOST_TEST(metering_ms(1'999'999) == 1);
  BOOST_TEST(metering_ms(2'000'000) == 2);
  BOOST_TEST(metering_ms(-1) == -1);
  BOOST_TEST(hour_of(hour + 5) == hour);
  BOOST_TEST(hour_of(-5) == -hour);
}

BOOST_AUTO_TEST_CASE(line_amount_rounds_half_up_to_a_micro_dollar) {
  // 1 GiB-hour of compute is 15,000 µ$, so 1/30,000 GiB-hour is exactly 0.5 µ$.
  usage_t one_gib_hour = static_cast<usage_t>(gib) * hour;
  BOOST_TEST(price_compute(one_gib_hour) == 15'000);
  usage_t half_micro = one_gib_hour / 30'000;
  BOOST_REQUIRE((half_micro * 30'000 == one_gib_hour));
  BOOST_TEST(price_compute(half_micro) == 1);     // 0.5 → 1
  BOOST_TEST(price_compute(half_micro - 1) == 0); // just under 0.5 → 0
  BOOST_TEST(price_compute(3 * half_micro) == 2); // 1.5 → 2
}

BOOST_AUTO_TEST_CASE(rates_are_configurable) {
  billing_rates r;
  r.compute_micro_usd_per_gib_hour = 40'000;
  r.storage_micro_usd_per_gib_month = 100'000;
  r.storage_month_hours = 720;
  usage_t one_gib_hour = static_cast<usage_t>(gib) * hour;
  BOOST_TEST(price_compute(2 * one_gib_hour, r) == 80'000);
  BOOST_TEST(price_storage(720 * one_gib_hour, r) == 100'000);
}

BOOST_AUTO_TEST_CASE(usage_beyond_int64_round_trips_through_text) {
  usage_t big = static_cast<usage_t>(INT64_MAX) * 1000 + 7;
  BOOST_TEST(usage_to_string(parse_usage(usage_to_string(big))) == "9223372036854775807007");
  BOOST_TEST(usage_to_string(-42) == "-42");
  BOOST_CHECK_THROW(parse_usage("12a"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_usage(""), std::invalid_argument);
}
