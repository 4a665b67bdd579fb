// What the routes share: the errors in each API's form, and who an envd call is from.
#include "e2b/routes.hpp"

#include "api/rpc_error.hpp"
#include "e2b/proto_json.hpp"

namespace sandboxd::e2b {

namespace {

// Connect's codes that sandboxd has no name for travel as "e2b.<code>: message".
constexpr std::string_view k_connect_prefix = "e2b.";

} // namespace

void throw_connect(connect_code code, std::string message) {
  kj::throwFatalException(kj::Exception(
    kj::Exception::Type::FAILED, __FILE__, __LINE__,
    kj::str(std::string(k_connect_prefix) + std::string(wire_name(code)) + ": " + message)));
}

connect_error connect_failure_of(const kj::Exception& e) {
  std::string_view d(e.getDescription().cStr());
  if (d.rfind(k_connect_prefix, 0) == 0) {
    d.remove_prefix(k_connect_prefix.size());
    const auto colon = d.find(": ");
    const auto name = d.substr(0, colon);
    const auto message = colon == std::string_view::npos ? "" : d.substr(colon + 2);
    for (auto c :
         {connect_code::deadline_exceeded, connect_code::already_exists,
          connect_code::unimplemented, connect_code::unauthenticated, connect_code::canceled,
          connect_code::invalid_argument, connect_code::not_found, connect_code::resource_exhausted,
          connect_code::unavailable, connect_code::internal})
      if (wire_name(c) == name)
        return connect_error{c, std::string(message)};
  }
  return to_connect(api::from_exception(e));
}

error failure_of(const kj::Exception& e) {
  std::string_view d(e.getDescription().cStr());
  if (d.rfind(k_connect_prefix, 0) == 0) {
    auto c = connect_failure_of(e);
    return make_error(c.code == connect_code::unauthenticated ? errc::permission_denied
                                                              : errc::invalid_argument,
                      c.message);
  }
  return api::from_exception(e);
}

std::string sandbox_gone_json(const std::string& sandbox_id) {
  json j;
  j["code"] = 502;
  j["message"] = "The sandbox " + sandbox_id +
                 " was not found: it was killed, reached its timeout or is paused "
                 "(Sandbox.connect resumes a paused one)";
  j["sandboxId"] = sandbox_id;
  return dump(j);
}

bool plausible_sandbox_id(std::string_view id) {
  if (id.empty() || id.size() > 128)
    return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.'))
      return false;
  return true;
}

std::string sandbox_path(std::string_view path) {
  if (!path.empty() && path.front() == '/')
    return std::string(path);
  return "/" + std::string(path);
}

kj::Promise<envd_caller> envd_caller_of(route_context& ctx, exchange& x) {
  if (x.sandbox_id.empty())
    throw_connect(connect_code::unauthenticated,
                  "no E2b-Sandbox-Id header: point E2B_SANDBOX_URL at this endpoint "
                  "(scripts/e2b-env) so that the SDK names the sandbox");
  if (x.access_token.empty())
    throw_connect(connect_code::unauthenticated,
                  "no X-Access-Token: use the envdAccessToken the sandbox API answered");
  auto key = ctx.sealer.open(x.access_token, x.sandbox_id);
  if (!key)
    throw_connect(connect_code::unauthenticated,
                  "the X-Access-Token is not one this endpoint gave for sandbox " + x.sandbox_id);
  return ctx.link.session_for(*key).then([id = x.sandbox_id](std::shared_ptr<daemon_session> s) {
    envd_caller c;
    c.sandbox = s->open(id);
    c.sandbox_id = id;
    c.sandbox_key = s->tenant + "/" + id;
    c.session = kj::mv(s);
    return c;
  });
}

} // namespace sandboxd::e2b
