// time_arg — instants as people type them, and as sandboxctl prints them.
//
// Accepted: "now"; a duration before or after now, "-1h", "+30m", "-1h30m"
// (duration_arg.hpp); RFC 3339, "2026-12-01T13:59:27Z", "2026-12-01T13:59:27.5+02:00"
// (fractions to the nanosecond, 't'/'z' in either case, a space for the 'T'); and a date
// alone, "2026-12-01", which is its midnight UTC.
// Printed: RFC 3339 in UTC with a 'Z', the fraction trimmed of trailing zeros.
#pragma once

#include "base/result.hpp"
#include "events/event.hpp"

#include <string>
#include <string_view>

namespace sandboxd::cli {

using time_point = events::time_point;

// invalid_argument naming the text and showing the accepted forms.
result<time_point> parse_time(std::string_view text, time_point now);

// "2026-12-01T13:59:27.045Z"; whole seconds print no fraction.
std::string format_time(time_point t);
// To the second, for tables: "2026-12-01T13:59:27Z".
std::string format_time_seconds(time_point t);
// To the millisecond, always three digits, for event lines: "2026-12-01T13:59:27.045Z".
std::string format_time_millis(time_point t);

// The whole hour at or before `t`, and at or after it.
time_point floor_hour(time_point t);
time_point ceil_hour(time_point t);

} // namespace sandboxd::cli
