// egress_proxy — the TCP half of a sandbox's way out (docs/network.md "The egress proxy").
// The node's egress table (egress_rules.hpp) redirects every TCP connection from a link to
// this proxy's port on the link's host side; the proxy
//   1. knows the sandbox by the connection's source (egress_book: a link's address; the
//      table drops a packet whose source is not its link's own);
//   2. reads the address the sandbox dialled (SO_ORIGINAL_DST) and, without consuming
//      them, the first bytes it sends: the TLS server name or the HTTP host (first_bytes.hpp),
//      waiting at most `first_bytes_wait` (a protocol where the server speaks first names
//      nothing);
//   3. asks the decider with that destination: the name, the address dialled and its class,
//      and whether sandboxd's resolver answered that address for that name;
//   4. when allowed, dials the address the sandbox dialled (never another: the name only
//      decides), sends the bytes read, relays both ways, and reports the bytes each way when
//      either side ends.
// One thread per connection, at most `max_connections` at once and `max_per_sandbox` of one
// sandbox (past either a connection is closed at once, unlogged, as a refused one would be),
// so that one sandbox's idle connections cannot take every thread from the others.
#pragma once

#include "network/address.hpp"
#include "network/egress_book.hpp"
#include "network/egress_decider.hpp"
#include "network/tcp_acceptor.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sandboxd::network {

struct proxy_options {
  std::uint16_t port = 0;           // on every address of the node; 0: one the kernel picks
  std::vector<cidr> sandbox_ranges; // classified `sandbox` (the node's link range)
  std::chrono::milliseconds first_bytes_wait{3000};
  std::chrono::milliseconds connect_timeout{10000};
  std::size_t max_connections = 4096;
  std::size_t max_per_sandbox = 512;
};

class egress_proxy {
public:
  // Listens at once (throws std::runtime_error naming what failed); serves on its own thread.
  egress_proxy(proxy_options options, egress_book& book, egress_decider& decider);
  ~egress_proxy();
  egress_proxy(const egress_proxy&) = delete;
  egress_proxy& operator=(const egress_proxy&) = delete;

  std::uint16_t port() const { return acceptor_->port(); }
  std::size_t open_connections() const;
  // Stops accepting, ends every connection (reported as interrupted) and joins.
  void stop();

private:
  void serve(int fd);
  // Relays between the sandbox's connection and the destination's until both have ended, the
  // stop, or an error; fills `closed`'s bytes and outcome.
  void relay(int fd, int up, std::vector<std::uint8_t> first, events::connection_closed& closed);

  proxy_options options_;
  egress_book& book_;
  egress_decider& decider_;
  int wake_[2] = {-1, -1}; // the stop's pipe: its read end in every poll
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> next_id_{1};
  std::mutex mu_;                                  // per_sandbox_
  std::map<std::string, std::size_t> per_sandbox_; // connections being served, by sandbox
  std::unique_ptr<tcp_acceptor> acceptor_;
};

// The node's own addresses now (every interface's), for classify().
std::vector<ip_address> node_own_addresses();

} // namespace sandboxd::network
