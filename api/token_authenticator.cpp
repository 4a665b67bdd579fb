#include "api/token_authenticator.hpp"

#include <stdexcept>

namespace sandboxd::api {

void token_authenticator::add(std::string_view token, const identity& who) {
  node::token_identity t{who.tenant, who.principal, {}};
  for (const auto& s : who.scopes) {
    auto parsed = node::parse_scope(s);
    if (!parsed)
      throw std::invalid_argument("unknown scope \"" + s + "\"; use sandboxes or admin");
    t.scopes.push_back(*parsed);
  }
  if (auto e = table_.add(node::token_sha256(token), std::move(t)))
    throw std::invalid_argument(e->message);
}

std::optional<identity> token_authenticator::lookup(std::string_view token) const {
  auto who = table_.authenticate(token);
  if (!who)
    return std::nullopt;
  identity id{who->tenant, who->principal, {}};
  for (auto s : who->scopes)
    id.scopes.emplace_back(node::to_string(s));
  return id;
}

} // namespace sandboxd::api
