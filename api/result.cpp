// result.cpp — reading a code's name.
#include "api/result.hpp"

namespace sandboxd::api {

std::optional<errc> parse_errc(std::string_view name) {
  errc code;
  if (!sandboxd::parse_errc(name, code))
    return std::nullopt;
  return code;
}

} // namespace sandboxd::api
