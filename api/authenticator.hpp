// authenticator.hpp — who a token stands for: the interface the RPC server asks at
// `authenticate`, and `identity`, what a Session is bound to.
//
// token_authenticator (api/token_authenticator.hpp) answers from the node's token table of
// hashed tokens. lookup() is called on the server's event-loop thread: it must be quick
// and must not block. An unknown token is an empty answer; an implementation compares
// secrets in constant time.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::api {

inline constexpr std::string_view k_scope_sandboxes = "sandboxes";
inline constexpr std::string_view k_scope_admin = "admin";

struct identity {
  std::string tenant;
  std::string principal;
  std::vector<std::string> scopes; // "sandboxes", "admin"

  bool has_scope(std::string_view scope) const {
    return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
  }
};

class authenticator {
public:
  virtual ~authenticator() = default;
  virtual std::optional<identity> lookup(std::string_view token) const = 0;
};

} // namespace sandboxd::api
