// access_token — the envd access token of an E2B sandbox. E2B's API hands one out with every
// sandbox it creates or connects to, and the SDKs send it (X-Access-Token) with every call to
// the sandbox's envd, which never sees the API key. sandboxd's endpoint serves those calls with
// the API key's own session, so the token carries the key, sealed for one sandbox:
//
//   "sbxat_" base64url( nonce (12 bytes) | AES-256-GCM(key, sandbox id \0 API key) | tag (16) )
//
// with the sandbox id as associated data too. Only the endpoint (which holds the 32-byte key,
// DATA_DIR/e2b-token.key) can open one; a token opened for another sandbox id, altered or
// made with another key is refused. It is stateless: a token outlives a restart of the daemon,
// and stops working when its API key is revoked (the key is authenticated again on each use).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandboxd::e2b {

class token_sealer {
public:
  // `key`: 32 bytes. Throws std::invalid_argument on another length.
  explicit token_sealer(std::string key);

  std::string seal(std::string_view sandbox_id, std::string_view api_key) const;
  // The API key of a token made for `sandbox_id`, or nothing.
  std::optional<std::string> open(std::string_view token, std::string_view sandbox_id) const;

  // The key kept in `path`: read (it must be 32 bytes, the file mode 0600), or made from
  // the system's random source and written there when the file does not exist. Throws
  // std::runtime_error saying what is wrong.
  static std::string load_or_make_key(const std::string& path);

private:
  std::string key_;
};

} // namespace sandboxd::e2b
