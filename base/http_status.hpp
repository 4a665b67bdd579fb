// http_status.hpp — the one mapping of the project's error code (errc.hpp) to an HTTP status,
// for sandboxd's HTTP surfaces (the web console, the E2B endpoint): not_found 404, conflict
// 409, permission_denied 403, invalid_argument, not_a_directory and is_a_directory 400,
// resource_exhausted 429, unavailable 503, too_large 413, internal 500.
#pragma once

#include "base/errc.hpp"

namespace sandboxd {

int http_status(errc code);

} // namespace sandboxd
