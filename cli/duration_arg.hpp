// duration_arg — durations as people type them: a sequence of <number><unit> with units
// d, h, m, s and ms ("90s", "15m", "2h", "1h30m", "1d12h", "500ms"); "0" alone is zero
// (which turns a timeout off). Whole numbers only; no sign, no spaces.
#pragma once

#include "base/result.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace sandboxd::cli {

// invalid_argument naming the text and showing the accepted forms.
result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// The shortest form parse_duration reads back: "1h30m", "1m30s", "500ms", "0s"; a
// remainder below a millisecond is shown in ns ("1s250ns").
std::string format_duration(std::chrono::nanoseconds d);

} // namespace sandboxd::cli
