// token_authenticator — the RPC server's authenticator over a table of hashed tokens: the
// node's token table (node/tokens.hpp: the tokens file and the development token), whose
// lookup compares SHA-256 digests in constant time. Tests and tools add tokens directly.
#pragma once

#include "api/authenticator.hpp"
#include "node/tokens.hpp"

namespace sandboxd::api {

class token_authenticator final : public authenticator {
public:
  token_authenticator() = default;
  explicit token_authenticator(node::token_table table) : table_(std::move(table)) {}

  // Adds `token` (only its SHA-256 is kept) for `who`. Throws std::invalid_argument for a
  // scope that is not "sandboxes" or "admin", or a token already there.
  void add(std::string_view token, const identity& who);

  std::optional<identity> lookup(std::string_view token) const override;

private:
  node::token_table table_;
};

} // namespace sandboxd::api
