// tokens — who a bearer token is: the tokens file, the development token, and the
// lookup that turns a presented token into a tenant, a principal and scopes.
//
// The tokens file (TOML, docs/operations.md) holds no token, only its SHA-256:
//
//   [[token]]
//   sha256 = "<64 lowercase hex digits: SHA-256 of the token's bytes>"
//   tenant = "acme"
//   principal = "ci@acme"
//   scopes = ["sandboxes"]          # "sandboxes", "admin"
//
// Scopes: `sandboxes` — create, inspect and operate the tenant's own sandboxes; `admin` —
// billing reports, the audit log and the whole event stream. A file with an unknown key,
// an unknown scope, a malformed hash or one hash twice is refused as a whole, naming the
// entry: a typo in a security file must not pass silently.
//
// Lookup hashes the presented token once and compares the digest with every entry's
// (CRYPTO_memcmp, all entries, no early exit), so its time does not depend on which
// entry matched or how much of a digest did.
//
// The development token: DATA_DIR/dev-token (mode 0600), made on a node's first start,
// "sbd_" followed by 64 hex digits of 32 random bytes; tenant "dev", principal "dev",
// scopes sandboxes and admin.
#pragma once

#include "base/sha256.hpp"
#include "events/errc.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::node {

enum class scope : std::uint8_t { sandboxes = 1, admin = 2 };
std::string_view to_string(scope s);
std::optional<scope> parse_scope(std::string_view name);

struct token_identity {
  std::string tenant;
  std::string principal;
  std::vector<scope> scopes;
  bool has(scope s) const;
  bool operator==(const token_identity&) const = default;
};

using token_digest = sandboxd::sha256_digest;

class token_table {
public:
  // Adds an entry; invalid_argument when its digest is already there.
  std::optional<events::error> add(const token_digest& sha256, token_identity who);
  // Who `token` is, or nullopt. Constant time in which entry matched.
  std::optional<token_identity> authenticate(std::string_view token) const;
  std::size_t size() const { return entries_.size(); }

private:
  struct entry {
    token_digest sha256;
    token_identity who;
  };
  std::vector<entry> entries_;
};

struct token_table_result {
  std::optional<token_table> value;
  std::optional<events::error> failure; // invalid_argument naming the entry and the problem
};

// Parses a tokens file's text; `source` names it in messages.
token_table_result parse_tokens(std::string_view toml_text, const std::string& source);
// Reads and parses a tokens file (not_found when it cannot be read).
token_table_result load_tokens(const std::string& path);

// SHA-256 of `token`.
token_digest token_sha256(std::string_view token);
// A new random token: "sbd_" + 64 hex digits.
std::string make_token();

// The development token in `path`: read when the file exists (refused unless it is a
// regular file of mode 0600 owned by this user holding one token), else made and written
// (0600, synced). `made` tells which.
struct dev_token {
  std::string token;
  bool made = false;
};
dev_token ensure_dev_token(const std::string& path); // throws start_error
token_identity dev_token_identity();

} // namespace sandboxd::node
