// routes — every HTTP route the console answers, in one table: the server registers exactly
// these (console_server.cpp refuses to start if one has no handler), and the security tests
// walk the same table, so a route added later is attacked too.
//
// Only GET routes read; the two POSTs sign in and out. Every /api/ route but login and
// session (which says only whether the caller is signed in) needs a live session (HTTP 401
// without one); the pages and their assets need none (they hold no data: what they show
// comes from the JSON routes).
#pragma once

#include <string_view>
#include <vector>

namespace sandboxd::console {

struct route {
  std::string_view name;    // the handler's name in console_server.cpp
  std::string_view method;  // "GET" | "POST"
  std::string_view pattern; // a regular expression over the path (httplib's)
  std::string_view example; // a path that matches, for tests and docs
  bool session = true;      // needs a signed-in session
};

const std::vector<route>& routes();

} // namespace sandboxd::console
