// result.cpp — reading a code's name, and the runtime's codes as the project's.
#include "api/result.hpp"

namespace sandboxd::api {

std::optional<errc> parse_errc(std::string_view name) {
  errc code;
  if (!sandboxd::parse_errc(name, code))
    return std::nullopt;
  return code;
}

errc from_runtime(runtime::errc code) {
  if (code == runtime::errc::failed)
    return errc::internal;
  return parse_errc(runtime::to_string(code)).value_or(errc::internal);
}

} // namespace sandboxd::api
