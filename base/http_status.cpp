#include "base/http_status.hpp"

namespace sandboxd {

int http_status(errc code) {
  switch (code) {
  case errc::not_found:
    return 404;
  case errc::conflict:
    return 409;
  case errc::permission_denied:
    return 403;
  case errc::invalid_argument:
  case errc::not_a_directory:
  case errc::is_a_directory:
    return 400;
  case errc::resource_exhausted:
    return 429;
  case errc::unavailable:
    return 503;
  case errc::too_large:
    return 413;
  case errc::internal:
    return 500;
  }
  return 500;
}

} // namespace sandboxd
