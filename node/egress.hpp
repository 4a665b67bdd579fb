// egress — the node's side of sandbox networks (docs/network.md): the nftables table that
// makes every link lead only to sandboxd (network/egress_rules.hpp, one table per node,
// loaded afresh at each start: whatever an earlier run left goes), the egress proxy and
// the resolver on every link's host side (network/egress_proxy.hpp, dns_relay.hpp), and
// the decider that puts each attempt to the sandbox's actor (open_connection, so every
// verdict is an event logged before anything is dialled; close_connection with the bytes).
//
// Links are learnt from the drivers: those that exist at start (driver list()), then each
// made by a create (link_made) and each removed (link_removed). Until its elements are in
// the table, a link's packets are dropped (the table is there before any link is used).
// At stop the table is deleted when no link is left; otherwise it stays (the stopped
// sandboxes' links still lead nowhere) and the next start replaces it.
#pragma once

#include "actors/control_plane.hpp"
#include "network/address.hpp"
#include "network/egress_book.hpp"
#include "network/egress_decider.hpp"
#include "network/egress_rules.hpp"
#include "network/socket_address.hpp"
#include "node/node_probe.hpp"
#include "runtime/driver.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sandboxd::network {
class dns_relay;
class egress_proxy;
class nft_table;
} // namespace sandboxd::network

namespace sandboxd::node {

struct egress_settings {
  std::string link_range;    // "10.200.0.0/16"
  std::string link_instance; // names the table and the links' interfaces (8 hex digits)
  std::string upstream_dns;  // "ADDR" or "ADDR:PORT"; "": the first nameserver of /etc/resolv.conf
  std::uint16_t proxy_port = 0; // 0: one the kernel picks
  std::uint16_t dns_port = 0;
  std::size_t proxy_max_connections = 4096; // network::proxy_options
  std::size_t proxy_max_per_sandbox = 512;
  // Whether the tenant may still put an event in the log (its hourly budget, api/log_budget);
  // a connection of a tenant past it is refused without an event. Empty: always.
  std::function<bool(const std::string& tenant)> admit;
  node_probe* probe = nullptr; // counts attempts and bytes (sandboxd_egress_*); may be null
};

class egress final : public network::egress_decider {
public:
  // Loads the table, listens. Throws std::runtime_error naming what failed.
  explicit egress(egress_settings settings);
  ~egress() override;

  // The control plane the verdicts go to; until set (and after stop) every attempt is
  // refused unlogged.
  void attach(actors::control_plane* plane);
  void link_made(const runtime::sandbox_info& info);
  void link_removed(const std::string& sandbox_id);
  // Stops the proxy and the resolver (open connections are closed as interrupted), then
  // detaches; deletes the table when no link is left.
  void stop();

  std::uint16_t proxy_port() const;
  std::uint16_t dns_port() const;
  const std::string& table() const { return params_.table; }
  std::size_t links() const { return book_.links(); }

  bool open(const network::link_owner& who, const std::string& connection_id,
            const events::net_destination& d) override;
  void closed(const network::link_owner& who, const events::connection_closed& c) override;

private:
  // "allowed", "denied" (logged) or "refused" (undecided, unlogged).
  const char* decide(const network::link_owner& who, const std::string& connection_id,
                     const events::net_destination& d);

  egress_settings settings_;
  network::egress_params params_;
  network::egress_book book_;
  std::unique_ptr<network::nft_table> nft_;
  std::unique_ptr<network::egress_proxy> proxy_;
  std::unique_ptr<network::dns_relay> dns_;
  std::mutex mu_; // plane_, entries_
  actors::control_plane* plane_ = nullptr;
  std::map<std::string, network::link_entry> entries_; // by sandbox id
  bool stopped_ = false;
};

// "ADDR" (port 53) or "ADDR:PORT", "[V6]:PORT"; nullopt otherwise.
std::optional<network::socket_address> parse_dns_server(const std::string& text);
// The first nameserver line of a resolv.conf's text; "" when none.
std::string first_nameserver(const std::string& resolv_conf);

} // namespace sandboxd::node
