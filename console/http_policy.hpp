// http_policy — what the web console says and checks on every HTTP exchange, as pure
// functions: the security headers of each response, the session cookie, and which requests
// are refused before any route sees them.
//
// Headers on every response: a Content-Security-Policy that lets the page load only
// sandboxd's own scripts, styles, images and JSON (no inline script or style, no eval, no
// other origin, no plugins, no framing, no form posts elsewhere, and Trusted Types required,
// so a string can never become markup through innerHTML and the like); nosniff; no referrer;
// no framing (frame-ancestors and X-Frame-Options); a cross-origin opener and resource
// policy of same-origin. JSON answers add Cache-Control: no-store.
//
// The cookie: `sandboxd_session` on plain HTTP, `__Host-sandboxd_session` over TLS (the
// prefix makes the browser insist on Secure, Path=/ and no Domain); always HttpOnly (no
// script reads it), SameSite=Strict (no other site's page sends it), Path=/, and Secure over
// TLS. It has no Max-Age: it ends with the browser session, or earlier with the server's.
//
// Refused before routing:
// - a Host header that names no loopback host while the console listens on loopback (DNS
//   rebinding: another site's name resolved to 127.0.0.1 must not reach the console);
// - a request a browser marks as sent by another site (Sec-Fetch-Site: cross-site or
//   same-site) to the JSON endpoints;
// - a login or logout whose Origin is another origin than the console's own.
#pragma once

#include "base/errc.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::console {

using header_list = std::vector<std::pair<std::string, std::string>>;

// The headers every response carries.
const header_list& security_headers();
// The Content-Security-Policy's value (also in security_headers()).
const std::string& content_security_policy();

std::string_view session_cookie_name(bool tls);
// The Set-Cookie value that signs `session_id` in, and the one that clears the cookie.
std::string session_cookie(std::string_view session_id, bool tls);
std::string cleared_session_cookie(bool tls);

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or nothing.
std::optional<std::string> cookie_value(std::string_view cookie_header, std::string_view name);

// The host part of a Host header ("127.0.0.1:8470" -> "127.0.0.1", "[::1]:80" -> "::1"),
// lowercase; nothing when it is malformed.
std::optional<std::string> host_of(std::string_view host_header);
bool loopback_host(std::string_view host); // localhost, 127.0.0.0/8, ::1

struct request_facts {
  std::string_view method;         // "GET", "POST", ...
  std::string_view path;           // "/api/sandboxes"
  std::string_view host;           // the Host header
  std::string_view origin;         // the Origin header ("" when absent)
  std::string_view sec_fetch_site; // the Sec-Fetch-Site header ("" when absent)
  bool listening_on_loopback = true;
  bool tls = false;
};

struct refusal {
  int status = 0; // 421 for a wrong host, 400 for a malformed one, 403 otherwise
  errc code = errc::permission_denied;
  std::string message;
};

// Why the request is refused before routing, or nothing.
std::optional<refusal> refuse_before_routing(const request_facts& r);

} // namespace sandboxd::console
