// console_server — sandboxd's web console (docs/console.md): an HTTP server (cpp-httplib)
// on one TCP address, TLS when a certificate is given (required off loopback: the daemon's
// settings refuse a non-loopback address without one), serving the front end compiled into
// sandboxd (assets.hpp) and the JSON routes of routes.hpp over console_reads.
//
// Guarantees:
// - Read-only: no route changes a sandbox, a read model or the log; the only state the
//   console keeps is its sessions (session_table.hpp), in memory.
// - Every response carries http_policy's security headers; requests it refuses (a foreign
//   Host on loopback, another site's request, a cross-origin sign-in) never reach a route.
// - Signing in takes a token of the daemon's token table (the RPC API's: the tokens file and
//   the development token); a session acts for the identity that token stands for, with its
//   scopes, and nothing else (console_reads.hpp says who reads what).
// - Bounds: a request body is at most 16 KiB; a connection idles at most 5 s between
//   requests; requests are served by `threads` worker threads (each blocking on PostgreSQL
//   or the log), which bounds the console's share of the database and the log's readers.
// - The constructor returns once the address listens (it throws std::runtime_error saying
//   what failed: the address taken, a certificate that does not load); the destructor stops
//   listening, finishes the requests in progress and joins every thread.
#pragma once

#include "api/authenticator.hpp"
#include "console/session_table.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace sandboxd::node {
class node;
}

namespace sandboxd::console {

struct console_options {
  std::string host = "127.0.0.1"; // IPv6 without brackets
  std::uint16_t port = 0;
  node::node* node = nullptr;               // not owned; runs while the console does
  const api::authenticator* auth = nullptr; // not owned
  std::string tls_certificate_file;         // PEM; both or neither
  std::string tls_key_file;
  session_limits sessions;
  std::size_t threads = 4;
};

class console_server {
public:
  explicit console_server(console_options options);
  ~console_server();
  console_server(const console_server&) = delete;
  console_server& operator=(const console_server&) = delete;

  // "https://127.0.0.1:8470/": where a browser opens it.
  std::string url() const;

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::console
