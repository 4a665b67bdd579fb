// http_error — the project's error vocabulary (base/errc.hpp) on the console's HTTP
// boundary: each code mapped once to an HTTP status, and the JSON body every failed call
// answers, the same `error` object sandboxctl --json prints:
//   {"error": {"code": "not_found", "message": "sandbox sb-… does not exist; …"}}
// not_found 404, conflict 409, permission_denied 403 (401 when there is no session),
// invalid_argument 400, resource_exhausted 429, unavailable 503, too_large 413, internal 500,
// not_a_directory and is_a_directory 400.
#pragma once

#include "base/errc.hpp"

#include <string>

namespace sandboxd::console {

int http_status(errc code);
std::string error_json(const error& e);

// What every data call answers without a live session (HTTP 401).
error no_session_error();

} // namespace sandboxd::console
