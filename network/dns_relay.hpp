// dns_relay — sandboxd's resolver for sandboxes (docs/network.md "The resolver"). The
// egress table redirects every DNS query from a link (UDP and TCP port 53, to any
// address) to this relay's port; the relay
//   1. knows the sandbox by the query's source (egress_book);
//   2. reads the one question (dns_message.hpp: a name whose labels are not host-name
//      labels names nothing and is refused, so data tunnelled in names never leaves);
//   3. asks the decider whether the sandbox may know the name (a denied question is a
//      connection_denied event; the answer is REFUSED);
//   4. for an allowed A question, asks the upstream server (the node's), answers the
//      addresses it gave for the name and notes them in the book, so that a connection to
//      one of them by that name is known to be the name's (policy.hpp `name_resolves`).
//      AAAA and other types of an allowed name are answered with no records (a sandbox's
//      IPv6 is refused on the host anyway, and no other record type is relayed).
// UDP questions are answered on a small pool of threads; TCP connections (one question at
// a time, 2-byte length prefix) on a thread each, at most `max_tcp` at once.
#pragma once

#include "network/egress_book.hpp"
#include "network/egress_decider.hpp"
#include "network/socket_address.hpp"
#include "network/tcp_acceptor.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace sandboxd {
class worker_pool;
}

namespace sandboxd::network {

struct dns_relay_options {
  std::uint16_t port = 0;  // UDP and TCP, every address of the node; 0: one the kernel picks
  socket_address upstream; // the node's resolver (UDP)
  std::chrono::milliseconds upstream_timeout{2000};
  std::size_t threads = 4;
  std::size_t max_tcp = 256;
};

class dns_relay {
public:
  dns_relay(dns_relay_options options, egress_book& book, egress_decider& decider);
  ~dns_relay();
  dns_relay(const dns_relay&) = delete;
  dns_relay& operator=(const dns_relay&) = delete;

  std::uint16_t port() const { return port_; }
  void stop();

  // The answer to `query` from a sandbox behind `from` (empty: no answer is sent). Public
  // for the tests.
  std::vector<std::uint8_t> answer(const ip_address& from, std::span<const std::uint8_t> query);

private:
  void udp_loop();
  void serve_tcp(int fd);

  dns_relay_options options_;
  egress_book& book_;
  egress_decider& decider_;
  int udp_ = -1;
  int wake_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<worker_pool> pool_;
  std::unique_ptr<tcp_acceptor> tcp_;
  std::mutex mu_;
  std::size_t udp_queued_ = 0;
  std::thread udp_thread_;
};

} // namespace sandboxd::network
