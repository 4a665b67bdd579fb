// errc.cpp — names of the project's error codes.
#include "events/errc.hpp"

namespace sandboxd::events {

std::string to_string(errc code) {
  switch (code) {
  case errc::not_found:
    return "not_found";
  case errc::conflict:
    return "conflict";
  case errc::permission_denied:
    return "permission_denied";
  case errc::invalid_argument:
    return "invalid_argument";
  case errc::resource_exhausted:
    return "resource_exhausted";
  case errc::unavailable:
    return "unavailable";
  }
  return "errc(" + std::to_string(static_cast<unsigned>(code)) + ")";
}

} // namespace sandboxd::events
