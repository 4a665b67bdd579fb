// e2b_server — sandboxd's E2B-compatible endpoint (docs/e2b.md): one HTTP port serving what the
// stock E2B SDKs call, E2B's sandbox API (create, list, get, kill, timeout, pause, connect) and
// the in-sandbox envd API (processes and files, Connect protocol), so that code written for
// E2B runs unchanged against sandboxd with E2B_API_URL and E2B_SANDBOX_URL pointing here
// (scripts/e2b-env prints them).
//
// Every call is made through sandboxd's own RPC API, on a connection of the endpoint's to the
// daemon's RPC address authenticated with the caller's API key (a sandboxd token): the same
// commands, events, quotas, limits, tenancy and audit as any client's. The envd calls carry
// the sealed access token the API handed out (access_token.hpp) instead of the key.
//
// It runs on a thread of its own with a kj event loop, listens on loopback over plain HTTP/1.1
// or elsewhere over TLS only, and bounds what a client can hold: connections in all and per
// address, each request's headers (time) and body (size and idle time), each response
// write's time, and the daemon connections it keeps (one per API key in use).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sandboxd::e2b {

struct e2b_limits {
  std::size_t max_connections = 1024;
  std::size_t max_connections_per_address = 256;
  std::chrono::milliseconds header_timeout{10'000};    // a request's line and headers
  std::chrono::milliseconds body_idle_timeout{30'000}; // no byte of a body for this long
  std::chrono::milliseconds write_timeout{60'000};     // a response write the client does not take
  std::chrono::milliseconds tls_handshake_timeout{10'000};
  std::size_t max_json_body = 512u << 10; // a sandbox API request (NewSandbox with 128 KiB of env)
  // One Connect message (SendInput carries up to 1 MiB of stdin, base64 in JSON).
  std::size_t max_message = (1u << 20) * 4 / 3 + (64u << 10);
  // The output a command may write per stream before the rest is dropped (the daemon's own
  // default is 1 MiB; E2B streams all of it): the daemon's default ceiling.
  std::uint64_t max_output_bytes = 256ull << 20;
  std::size_t max_sessions = 256; // API keys whose daemon connection is kept for reuse
  std::chrono::milliseconds session_idle{120'000}; // one unused this long is forgotten
};

struct e2b_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;           // 0: any free port (url() says which)
  std::string daemon_address;       // the RPC address to call, "unix:PATH" or loopback "tcp:..."
  std::string tls_certificate_file; // PEM; required off loopback
  std::string tls_key_file;
  std::string token_key_file; // the access tokens' key (made when missing)
  // Where to say where the endpoint is, for scripts/e2b-env ("url=URL" and, over TLS,
  // "ca_file=PEM" lines); written once listening, removed at stop. "": nowhere.
  std::string endpoint_file;
  e2b_limits limits;
};

class e2b_server {
public:
  // Listening when it returns. Throws std::runtime_error saying why it cannot (the port is
  // taken, no TLS certificate off loopback, the key file is unreadable).
  explicit e2b_server(e2b_options options);
  ~e2b_server(); // stops listening, drops every connection, joins the thread
  e2b_server(const e2b_server&) = delete;
  e2b_server& operator=(const e2b_server&) = delete;

  // "http://127.0.0.1:PORT" or "https://HOST:PORT".
  std::string url() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::e2b
