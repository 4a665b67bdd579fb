#include "api/token_table.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace sandboxd::api {

token_table::digest token_table::hash(std::string_view token) {
  digest d;
  ::SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
  return d;
}

void token_table::add(std::string_view token, identity who) {
  by_hash_[hash(token)] = std::move(who);
}

std::optional<identity> token_table::lookup(std::string_view token) const {
  static const digest k_dummy{};
  const auto d = hash(token);
  // The map is ordered by digest, not by token: its search reveals nothing about the token.
  auto it = by_hash_.find(d);
  const digest& stored = it == by_hash_.end() ? k_dummy : it->first;
  const bool equal = CRYPTO_memcmp(stored.data(), d.data(), d.size()) == 0;
  if (it == by_hash_.end() || !equal)
    return std::nullopt;
  return it->second;
}

} // namespace sandboxd::api
