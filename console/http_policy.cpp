#include "console/http_policy.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>

namespace sandboxd::console {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

} // namespace

const std::string& content_security_policy() {
  static const std::string csp = "default-src 'none'; script-src 'self'; style-src 'self'; "
                                 "img-src 'self'; connect-src 'self'; font-src 'none'; "
                                 "object-src 'none'; base-uri 'none'; form-action 'self'; "
                                 "frame-ancestors 'none'; require-trusted-types-for 'script'; "
                                 "trusted-types 'none'";
  return csp;
}

const header_list& security_headers() {
  static const header_list headers{
    {"Content-Security-Policy", content_security_policy()},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
    {"Cross-Origin-Resource-Policy", "same-origin"},
    {"Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()"},
  };
  return headers;
}

std::string_view session_cookie_name(bool tls) {
  return tls ? "__Host-sandboxd_session" : "sandboxd_session";
}

std::string session_cookie(std::string_view session_id, bool tls) {
  std::string c = std::string(session_cookie_name(tls)) + "=" + std::string(session_id) +
                  "; Path=/; HttpOnly; SameSite=Strict";
  if (tls)
    c += "; Secure";
  return c;
}

std::string cleared_session_cookie(bool tls) {
  std::string c =
    std::string(session_cookie_name(tls)) + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict";
  if (tls)
    c += "; Secure";
  return c;
}

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const auto semi = header.find(';');
    std::string_view pair = trim(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos)
      continue;
    if (trim(pair.substr(0, eq)) == name)
      return std::string(trim(pair.substr(eq + 1)));
  }
  return std::nullopt;
}

std::optional<std::string> host_of(std::string_view h) {
  h = trim(h);
  if (h.empty())
    return std::nullopt;
  std::string_view host;
  std::string_view rest;
  if (h.front() == '[') {
    const auto close = h.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    host = h.substr(1, close - 1);
    rest = h.substr(close + 1);
  } else {
    const auto colon = h.find(':');
    host = h.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : h.substr(colon);
  }
  if (host.empty())
    return std::nullopt;
  if (!rest.empty()) {
    if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6 ||
        !std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
  }
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
          c == '_'))
      return std::nullopt;
  return lower(host);
}

bool loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1")
    return true;
  in_addr a{};
  if (::inet_pton(AF_INET, std::string(host).c_str(), &a) == 1)
    return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

std::optional<refusal> refuse_before_routing(const request_facts& r) {
  auto host = host_of(r.host);
  if (!host)
    return refusal{400, errc::invalid_argument,
                   "the request's Host header is missing or malformed; "
                   "open the console at the address sandboxd logs (console: ...)"};
  if (r.listening_on_loopback && !loopback_host(*host))
    return refusal{421, errc::permission_denied,
                   "this console listens on loopback and answers only "
                   "requests for a loopback host (localhost, 127.0.0.1, [::1]), not \"" +
                     *host + "\"; open it by one of those"};
  const bool api = starts_with(r.path, "/api/");
  if (api && (r.sec_fetch_site == "cross-site" || r.sec_fetch_site == "same-site"))
    return refusal{403, errc::permission_denied,
                   "the console's data is not served to other sites' "
                   "pages; open the console itself"};
  if (r.method != "GET" && r.method != "HEAD") {
    if (!r.origin.empty()) {
      // The Origin must be this console: the scheme it is served with and the Host asked for.
      const std::string own = std::string(r.tls ? "https://" : "http://") + lower(trim(r.host));
      if (lower(r.origin) != own)
        return refusal{403, errc::permission_denied,
                       "a sign-in or sign-out from another origin (" + std::string(r.origin) +
                         ") is refused; use the console's own page"};
    } else if (!r.sec_fetch_site.empty() && r.sec_fetch_site != "same-origin" &&
               r.sec_fetch_site != "none") {
      return refusal{403, errc::permission_denied,
                     "a sign-in or sign-out from another site is "
                     "refused; use the console's own page"};
    }
  }
  return std::nullopt;
}

} // namespace sandboxd::console
