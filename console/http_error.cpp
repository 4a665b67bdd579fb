#include "console/http_error.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::console {

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

std::string error_json(const error& e) {
  nlohmann::ordered_json j;
  j["error"]["code"] = to_string(e.code);
  j["error"]["message"] = e.message;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

error no_session_error() {
  return make_error(errc::permission_denied,
                    "not signed in (no session, or it ended); sign in with a sandboxd token");
}

} // namespace sandboxd::console
