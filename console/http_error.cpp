#include "console/http_error.hpp"

#include <nlohmann/json.hpp>

namespace sandboxd::console {

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
