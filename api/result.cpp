// result.cpp — names of the RPC layer's error codes and the conversions into them.
#include "api/result.hpp"

#include <array>

namespace sandboxd::api {
namespace {

constexpr std::array<std::string_view, 10> k_names = {
  "not_found",   "conflict",        "permission_denied", "invalid_argument", "resource_exhausted",
  "unavailable", "not_a_directory", "is_a_directory",    "too_large",        "internal",
};

} // namespace

std::string to_string(errc code) {
  const auto n = static_cast<std::size_t>(code);
  if (n >= 1 && n <= k_names.size())
    return std::string(k_names[n - 1]);
  return "errc(" + std::to_string(n) + ")";
}

std::optional<errc> parse_errc(std::string_view name) {
  for (std::size_t i = 0; i < k_names.size(); ++i)
    if (k_names[i] == name)
      return static_cast<errc>(i + 1);
  return std::nullopt;
}

errc from_events(events::errc code) {
  // The numbers are shared (events/errc.hpp); an unknown one is a fault of this build.
  const auto n = static_cast<std::uint16_t>(code);
  return n >= 1 && n <= k_names.size() ? static_cast<errc>(n) : errc::internal;
}

errc from_runtime(runtime::errc code) {
  if (code == runtime::errc::failed)
    return errc::internal;
  return parse_errc(runtime::to_string(code)).value_or(errc::internal);
}

} // namespace sandboxd::api
