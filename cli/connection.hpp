// connection — where sandboxctl connects and with which token, from its flags, the
// environment and the defaults, in this order (the first that is set wins):
//
//   address: --addr, SANDBOXD_ADDR, unix:./var/sandboxd.sock
//   token:   --token, --token-file, SANDBOXD_TOKEN, SANDBOXD_TOKEN_FILE, ./var/dev-token
//   TLS:     --tls-ca, SANDBOXD_TLS_CA (the PEM file of the certificates to trust on a
//            non-loopback TCP address; default: the system's trust store)
//
// The defaults are what `sandboxd` with no flags makes in its working directory, so a
// first session on one machine needs no set-up. A token file's trailing blanks and
// newlines are dropped.
#pragma once

#include "api/client.hpp"
#include "base/result.hpp"

#include <functional>
#include <optional>
#include <string>

namespace sandboxd::cli {

inline constexpr const char* k_default_addr = "unix:./var/sandboxd.sock";
inline constexpr const char* k_default_token_file = "./var/dev-token";

struct connection_flags {
  std::string addr;
  std::string token;
  std::string token_file;
  std::string tls_ca;
};

struct environment {
  // The variable's value, or nullopt when it is unset (an empty value counts as unset).
  std::function<std::optional<std::string>(const char* name)> get;
  // The file's content, or nullopt when it cannot be read.
  std::function<std::optional<std::string>(const std::string& path)> read_file;

  static environment process(); // getenv and the file system
};

// The client's options, or why there are none: usage-like problems (a token file that
// cannot be read, no token anywhere) are invalid_argument with what to do.
result<api::client_options> resolve_connection(const connection_flags& flags,
                                               const environment& env);

} // namespace sandboxd::cli
