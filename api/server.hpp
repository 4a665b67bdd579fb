// server — sandboxd's Cap'n Proto RPC server (schemas/api.capnp, docs/api.md).
//
// A server owns one thread that runs a kj event loop: it listens on every address of
// `listen` (unix sockets; TCP, with TLS where the address is not loopback), serves each
// connection as a two-party RPC vat whose bootstrap capability is `Gateway`, and talks to
// the control plane (CAF) by submit/query with replies handed back through a loop_bridge:
// no actor thread ever waits for the loop, and the loop never waits for an actor.
// PostgreSQL queries and log reads of streams run on worker threads.
//
// Guarantees:
// - Tenancy by construction: every capability a connection obtains acts for the identity
//   its token was authenticated as. A sandbox of another tenant answers exactly what a
//   missing one answers (NOT_FOUND, same message), and every NOT_FOUND about a sandbox is
//   held until `not_found_floor` after the call arrived, so a missing id and another
//   tenant's id (even one whose actor must first be rebuilt from the log) take the same
//   time as seen by the caller.
// - Bounds: a message is at most `max_message_bytes` (Cap'n Proto's traversal limit; a
//   bigger one ends the connection), a connection has at most `max_calls_in_flight` calls
//   and `max_streams_per_connection` streams, a tenant at most
//   `max_connections_per_tenant` authenticated connections, the server `max_connections`.
//   Streams (watch, tail) pull from the log and await Cap'n Proto's flow control: a slow
//   or stopped client holds at most one read batch and one flow-control window per
//   stream, never an actor.
// - Quotas (per tenant: sandboxes, and their memory, CPU, pids and disk) are checked against the
//   tenant_ledger, which folds the log (the actors' durable truth) and counts admitted
//   creates from the moment they are admitted.
// - The constructor returns once every address listens and the ledger holds the whole log;
//   the destructor stops listening, drops every connection (clients see DISCONNECTED) and
//   joins the thread. Replies that arrive later are dropped.
#pragma once

#include "api/authenticator.hpp"
#include "api/convert.hpp"
#include "api/tenant_ledger.hpp"
#include "network/policy.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::actors {
class control_plane;
}
namespace sandboxd::templates {
class template_registry;
}
namespace sandboxd::events {
class event_log;
}

namespace sandboxd::api {

struct server_options {
  std::vector<std::string> listen;        // "unix:PATH", "tcp:HOST:PORT" (port 0: any)
  actors::control_plane* plane = nullptr; // not owned; outlives the server
  events::event_log* log = nullptr;       // the control plane's log
  // The node's templates: a create names one (the sandbox's `created` records its content).
  // Null: template names go to the driver as they are (a hollow-only node).
  templates::template_registry* templates = nullptr;
  const authenticator* auth = nullptr; // not owned
  std::string pg_conninfo;             // the read models; "": list/bill/audit unavailable
  std::string pg_schema = "public";
  create_defaults defaults;
  tenant_quota quota;                         // every tenant's, unless overridden below
  std::map<std::string, tenant_quota> quotas; // per tenant
  // The widest network policy a tenant may ask for (docs/network.md "Tenant ceilings"):
  // every tenant's, unless overridden below; above it a create is permission_denied.
  network::ceiling network_ceiling;
  std::map<std::string, network::ceiling> network_ceilings; // per tenant
  std::size_t max_message_bytes = 16u << 20;
  // Largest file a writeFile upload may carry (the driver's limit is the sandbox's own).
  std::uint64_t max_upload_bytes = 64ull << 20;
  // Output of one exec buffered for a client that reads it slower than it is produced;
  // past it the exec waits (its pipe fills), the daemon's memory does not grow.
  std::size_t output_window_bytes = 1u << 20;
  std::size_t max_calls_in_flight = 256; // per connection
  std::size_t max_streams_per_connection = 16;
  std::size_t max_connections_per_tenant = 64;
  std::size_t max_connections = 1024; // authenticated ones, all tenants together
  // Connections no token was accepted on yet have places of their own, so that they never
  // keep out a client that authenticates: past `max_unauthenticated_connections` (or, on
  // TCP, `max_unauthenticated_per_address` from one address) the oldest of them is closed
  // to make room, and each is closed once `authentication_deadline` passed without a token.
  std::size_t max_unauthenticated_connections = 256;
  std::size_t max_unauthenticated_per_address = 64;
  std::chrono::milliseconds authentication_deadline{10'000};
  // Uploads (writeFile) not committed yet buffer their content in the daemon: bounded per
  // connection and per tenant in number and bytes; one with no write for `upload_idle` is
  // dropped (its later writes and commit answer conflict).
  std::size_t max_uploads_per_connection = 16;
  std::size_t max_uploads_per_tenant = 64;
  std::uint64_t max_upload_buffer_bytes_per_tenant = 128ull << 20;
  std::chrono::milliseconds upload_idle{60'000};
  std::chrono::milliseconds not_found_floor{2};
  // TLS for TCP addresses that are not loopback (PEM files); also on loopback when set.
  std::string tls_certificate_file;
  std::string tls_key_file;
  bool tls_on_loopback = false;
  std::size_t worker_threads = 2; // PostgreSQL queries and stream reads
  std::string version = "0.1.0";
  // Called on the server's loop once each call has answered: the method ("Session.get"),
  // the outcome ("ok" or the error code's name) and the seconds from arrival to answer.
  std::function<void(std::string_view method, std::string_view outcome, double seconds)> on_call;
};

struct server_stats {
  std::size_t connections = 0;
  std::size_t calls_in_flight = 0;
  std::size_t streams = 0;
  std::uint64_t stream_events_sent = 0;
  std::size_t outgoing_queue_bytes = 0; // Cap'n Proto messages queued, all connections
};

class server {
public:
  explicit server(server_options options);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // The addresses listened on, as parse_address reads them (a TCP port 0 resolved).
  std::vector<std::string> addresses() const;
  server_stats stats() const;
  tenant_usage usage(const std::string& tenant) const;
  // Whether `tenant` may still put events in the log this hour (its log budget): the node's
  // egress refuses a tenant's connections past it (node/egress.hpp). Thread-safe.
  bool admits_log(const std::string& tenant) const;

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::api
