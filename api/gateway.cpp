// gateway — the bootstrap capability: authenticate a token into a Session, and version.
#include "api/service_context.hpp"

namespace sandboxd::api {
namespace {

constexpr std::uint32_t k_api_level = 1;

class gateway final : public rpc::Gateway::Server {
public:
  gateway(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn)
      : ctx_(std::move(ctx)), conn_(std::move(conn)) {}

  kj::Promise<void> authenticate(AuthenticateContext context) override {
    auto& ctx = *ctx_;
    auto slot = enter(ctx, conn_);
    auto token = context.getParams().getToken();
    auto who = ctx.auth->lookup(std::string_view(token.begin(), token.size()));
    if (!who)
      throw_error(errc::permission_denied,
                  "the token is not known to this sandboxd; check SANDBOXD_TOKEN (or the token "
                  "file) and that it was not revoked");
    if (!conn_->tenants.count(who->tenant)) {
      auto& open = ctx.connections_by_tenant[who->tenant];
      if (open >= ctx.options.max_connections_per_tenant)
        throw_error(errc::resource_exhausted,
                    "tenant " + who->tenant + " has " + std::to_string(open) +
                      " connections open, the most it may have; close one and retry");
      ++open;
      conn_->tenants.insert(who->tenant);
    }
    if (!conn_->authenticated) {
      conn_->authenticated = true;
      --ctx.unauthenticated;
    }
    auto results = context.getResults();
    auto id = results.initIdentity();
    id.setTenant(who->tenant);
    id.setPrincipal(who->principal);
    auto scopes = id.initScopes(static_cast<unsigned>(who->scopes.size()));
    for (unsigned i = 0; i < who->scopes.size(); ++i)
      scopes.set(i, who->scopes[i]);
    results.setSession(make_session(ctx_, conn_, std::move(*who)));
    return kj::READY_NOW;
  }

  kj::Promise<void> version(VersionContext context) override {
    auto results = context.getResults();
    results.setVersion(ctx_->options.version);
    results.setApiLevel(k_api_level);
    return kj::READY_NOW;
  }

private:
  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
};

} // namespace

rpc::Gateway::Client make_gateway(std::shared_ptr<service_context> ctx,
                                  std::shared_ptr<connection_state> conn) {
  return kj::heap<gateway>(std::move(ctx), std::move(conn));
}

} // namespace sandboxd::api
