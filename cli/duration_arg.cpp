#include "cli/duration_arg.hpp"

#include <array>
#include <cstdint>
#include <limits>

namespace sandboxd::cli {
namespace {

using ns = std::chrono::nanoseconds;

struct unit {
  std::string_view name;
  std::int64_t nanos;
};

// Longest names first where one is a prefix of another ("ms" before "m", "ns" before…).
constexpr std::array<unit, 6> k_units{{{"ms", 1'000'000},
                                       {"ns", 1},
                                       {"d", 86'400'000'000'000},
                                       {"h", 3'600'000'000'000},
                                       {"m", 60'000'000'000},
                                       {"s", 1'000'000'000}}};

error bad(std::string_view text, std::string_view why) {
  return make_error(errc::invalid_argument, "'" + std::string(text) + "' is not a duration (" +
                                              std::string(why) +
                                              "); write it like 90s, 15m, 2h or 1h30m");
}

} // namespace

result<ns> parse_duration(std::string_view text) {
  if (text == "0")
    return ns{0};
  if (text.empty())
    return bad(text, "it is empty");
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] < '0' || text[i] > '9')
      return bad(text, "a number must come before each unit");
    std::int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
        return bad(text, "it is too long");
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    const unit* u = nullptr;
    for (const auto& candidate : k_units)
      if (text.substr(i, candidate.name.size()) == candidate.name) {
        u = &candidate;
        break;
      }
    if (!u)
      return bad(text, i == text.size() ? "a number needs a unit: d, h, m, s or ms"
                                        : "units are d, h, m, s and ms");
    i += u->name.size();
    if (n > (std::numeric_limits<std::int64_t>::max() - total) / u->nanos)
      return bad(text, "it is too long");
    total += n * u->nanos;
  }
  return ns{total};
}

std::string format_duration(ns d) {
  std::int64_t left = d.count();
  if (left == 0)
    return "0s";
  std::string out;
  if (left < 0) {
    out = "-";
    left = -left;
  }
  constexpr std::array<unit, 6> order{{{"d", 86'400'000'000'000},
                                       {"h", 3'600'000'000'000},
                                       {"m", 60'000'000'000},
                                       {"s", 1'000'000'000},
                                       {"ms", 1'000'000},
                                       {"ns", 1}}};
  for (const auto& u : order) {
    if (left >= u.nanos) {
      out += std::to_string(left / u.nanos) + std::string(u.name);
      left %= u.nanos;
    }
  }
  return out;
}

} // namespace sandboxd::cli
