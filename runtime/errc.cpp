#include "runtime/errc.hpp"

namespace sandboxd::runtime {

const char* to_string(errc code) {
  switch (code) {
  case errc::not_found:
    return "not_found";
  case errc::conflict:
    return "conflict";
  case errc::invalid_argument:
    return "invalid_argument";
  case errc::not_a_directory:
    return "not_a_directory";
  case errc::is_a_directory:
    return "is_a_directory";
  case errc::too_large:
    return "too_large";
  case errc::permission_denied:
    return "permission_denied";
  case errc::resource_exhausted:
    return "resource_exhausted";
  case errc::unavailable:
    return "unavailable";
  case errc::failed:
    return "failed";
  }
  return "unknown";
}

} // namespace sandboxd::runtime
