#include "cli/time_arg.hpp"

#include "cli/duration_arg.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace sandboxd::cli {
namespace {

using namespace std::chrono;

error bad(std::string_view text, std::string_view why) {
  return make_error(errc::invalid_argument,
                    "'" + std::string(text) + "' is not a time (" + std::string(why) +
                      "); write RFC 3339 (2026-12-01T13:59:27Z), a date (2026-12-01), now, "
                      "or a duration from now (-1h, +30m)");
}

// Reads exactly `n` digits at `i`.
bool digits(std::string_view s, std::size_t& i, std::size_t n, int& out) {
  if (i + n > s.size())
    return false;
  out = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const char c = s[i + k];
    if (c < '0' || c > '9')
      return false;
    out = out * 10 + (c - '0');
  }
  i += n;
  return true;
}

bool expect(std::string_view s, std::size_t& i, char c) {
  if (i < s.size() && s[i] == c) {
    ++i;
    return true;
  }
  return false;
}

} // namespace

result<time_point> parse_time(std::string_view text, time_point now) {
  if (text == "now")
    return now;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    auto d = parse_duration(text.substr(1));
    if (!d)
      return bad(text, "after the sign comes a duration such as 1h or 30m");
    return text[0] == '-' ? now - *d : now + *d;
  }
  std::size_t i = 0;
  int y = 0, mo = 0, d = 0;
  if (!digits(text, i, 4, y) || !expect(text, i, '-') || !digits(text, i, 2, mo) ||
      !expect(text, i, '-') || !digits(text, i, 2, d))
    return bad(text, "it does not start with a date YYYY-MM-DD");
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                           day{static_cast<unsigned>(d)}};
  if (!ymd.ok())
    return bad(text, "no such date");
  time_point t = time_point_cast<nanoseconds>(sys_days{ymd});
  if (i == text.size())
    return t;
  if (!(expect(text, i, 'T') || expect(text, i, 't') || expect(text, i, ' ')))
    return bad(text, "the date and the time are joined by T");
  int h = 0, mi = 0, s = 0;
  if (!digits(text, i, 2, h) || !expect(text, i, ':') || !digits(text, i, 2, mi) ||
      !expect(text, i, ':') || !digits(text, i, 2, s))
    return bad(text, "the time is HH:MM:SS");
  if (h > 23 || mi > 59 || s > 60)
    return bad(text, "no such time of day");
  t += hours{h} + minutes{mi} + seconds{s};
  if (expect(text, i, '.') || expect(text, i, ',')) {
    std::int64_t frac = 0;
    int n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n < 9) {
        frac = frac * 10 + (text[i] - '0');
        ++n;
      }
      ++i;
    }
    if (n == 0)
      return bad(text, "a fraction of a second needs digits");
    for (; n < 9; ++n)
      frac *= 10;
    t += nanoseconds{frac};
  }
  if (expect(text, i, 'Z') || expect(text, i, 'z')) {
    // UTC
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    const bool minus = text[i] == '-';
    ++i;
    int oh = 0, om = 0;
    if (!digits(text, i, 2, oh) || !expect(text, i, ':') || !digits(text, i, 2, om))
      return bad(text, "the offset is +HH:MM or -HH:MM");
    const auto offset = hours{oh} + minutes{om};
    t = minus ? t + offset : t - offset;
  } else {
    return bad(text, "the time needs a zone: Z or an offset such as +02:00");
  }
  if (i != text.size())
    return bad(text, "there is more after the zone");
  return t;
}

std::string format_time(time_point t) {
  std::string out = format_time_seconds(t);
  auto frac = (t - floor<seconds>(t)).count();
  if (frac == 0)
    return out;
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(frac));
  std::string f(buf);
  while (f.back() == '0')
    f.pop_back();
  out.insert(out.size() - 1, f);
  return out;
}

std::string format_time_seconds(time_point t) {
  const auto secs = floor<seconds>(t);
  const auto days = floor<std::chrono::days>(secs);
  const year_month_day ymd{days};
  const hh_mm_ss<seconds> hms{secs - days};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

std::string format_time_millis(time_point t) {
  const auto ms = floor<milliseconds>(t);
  std::string out = format_time_seconds(ms);
  char buf[24];
  std::snprintf(buf, sizeof buf, ".%03lld",
                static_cast<long long>((ms - floor<seconds>(ms)).count()));
  out.insert(out.size() - 1, buf);
  return out;
}

time_point floor_hour(time_point t) {
  return floor<hours>(t);
}

time_point ceil_hour(time_point t) {
  return ceil<hours>(t);
}

} // namespace sandboxd::cli
