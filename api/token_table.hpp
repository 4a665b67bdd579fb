// token_table — an authenticator over an in-memory table of hashed tokens.
//
// Only the SHA-256 of a token is kept. lookup() hashes the presented token and compares the
// digest with the stored one in constant time (CRYPTO_memcmp); an unknown token costs the
// same hash and one comparison against a fixed dummy digest, so neither the answer's time
// nor the table's layout tells a caller how close a guess was.
#pragma once

#include "api/authenticator.hpp"

#include <array>
#include <cstdint>
#include <map>

namespace sandboxd::api {

class token_table final : public authenticator {
public:
  // Adds (or replaces) the identity of `token`.
  void add(std::string_view token, identity who);
  std::optional<identity> lookup(std::string_view token) const override;

private:
  using digest = std::array<std::uint8_t, 32>;
  static digest hash(std::string_view token);
  std::map<digest, identity> by_hash_;
};

} // namespace sandboxd::api
