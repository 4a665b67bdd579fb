// errc.cpp — names of the project's error codes.
#include "base/errc.hpp"

#include <array>
#include <ostream>
#include <utility>

namespace sandboxd {
namespace {

constexpr std::array<std::pair<errc, std::string_view>, 10> k_names{{
  {errc::not_found, "not_found"},
  {errc::conflict, "conflict"},
  {errc::permission_denied, "permission_denied"},
  {errc::invalid_argument, "invalid_argument"},
  {errc::resource_exhausted, "resource_exhausted"},
  {errc::unavailable, "unavailable"},
  {errc::not_a_directory, "not_a_directory"},
  {errc::is_a_directory, "is_a_directory"},
  {errc::too_large, "too_large"},
  {errc::internal, "internal"},
}};

} // namespace

std::string to_string(errc code) {
  for (const auto& [c, name] : k_names)
    if (c == code)
      return std::string(name);
  return "errc(" + std::to_string(static_cast<unsigned>(code)) + ")";
}

std::ostream& operator<<(std::ostream& out, errc code) {
  return out << to_string(code);
}

bool parse_errc(std::string_view name, errc& out) {
  for (const auto& [c, n] : k_names)
    if (n == name) {
      out = c;
      return true;
    }
  return false;
}

} // namespace sandboxd
