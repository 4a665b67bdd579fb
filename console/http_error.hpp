// http_error — the project's error vocabulary (base/errc.hpp) on the console's HTTP
// boundary: each code's HTTP status (base/http_status.hpp; 401 when there is no session), and
// the JSON body every failed call answers, the same `error` object sandboxctl --json prints:
//   {"error": {"code": "not_found", "message": "sandbox sb-… does not exist; …"}}
#pragma once

#include "base/errc.hpp"
#include "base/http_status.hpp"

#include <string>

namespace sandboxd::console {

std::string error_json(const error& e);

// What every data call answers without a live session (HTTP 401).
error no_session_error();

} // namespace sandboxd::console
