#include "node/egress.hpp"

#include "network/dns_relay.hpp"
#include "network/egress_proxy.hpp"
#include "network/nft_table.hpp"
#include "runtime/sandbox_link.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace sandboxd::node {

std::optional<network::socket_address> parse_dns_server(const std::string& text) {
  if (auto a = network::parse_address(text))
    return network::socket_address{*a, 53};
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find("]:");
    if (close == std::string::npos)
      return std::nullopt;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos)
      return std::nullopt;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  auto a = network::parse_address(host);
  if (!a || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const auto p = std::stoul(port);
  if (p == 0 || p > 65535)
    return std::nullopt;
  return network::socket_address{*a, static_cast<std::uint16_t>(p)};
}

std::string first_nameserver(const std::string& resolv_conf) {
  std::istringstream in(resolv_conf);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key, value;
    if (words >> key >> value && key == "nameserver")
      return value;
  }
  return {};
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

egress::egress(egress_settings settings) : settings_(std::move(settings)) {
  const auto range = runtime::parse_link_range(settings_.link_range);
  if (!range)
    throw std::runtime_error("link range '" + settings_.link_range +
                             "' is not an IPv4 block of at least a /30; give one like "
                             "10.200.0.0/16");
  auto upstream_text = settings_.upstream_dns.empty()
                         ? first_nameserver(read_file("/etc/resolv.conf"))
                         : settings_.upstream_dns;
  const auto upstream = parse_dns_server(upstream_text);
  if (!upstream)
    throw std::runtime_error("upstream DNS server '" + upstream_text +
                             "' is not ADDRESS or ADDRESS:PORT; set network.upstream_dns");
  network::proxy_options po;
  po.port = settings_.proxy_port;
  po.max_connections = settings_.proxy_max_connections;
  po.max_per_sandbox = settings_.proxy_max_per_sandbox;
  po.sandbox_ranges.push_back(network::cidr{network::ip_address::v4(range->base), range->prefix});
  proxy_ = std::make_unique<network::egress_proxy>(po, book_, *this);
  network::dns_relay_options dop;
  dop.port = settings_.dns_port;
  dop.upstream = *upstream;
  dns_ = std::make_unique<network::dns_relay>(dop, book_, *this);
  params_.table = "sandboxd_" + settings_.link_instance;
  params_.interface_prefix = runtime::link_interface_prefix(settings_.link_instance);
  params_.proxy_port = proxy_->port();
  params_.dns_port = dns_->port();
  nft_ = std::make_unique<network::nft_table>();
  if (auto ok = nft_->run(network::egress_ruleset(params_, {})); !ok)
    throw std::runtime_error("cannot load the egress table " + params_.table + ": " +
                             ok.err().message);
}

egress::~egress() {
  stop();
}

void egress::attach(actors::control_plane* plane) {
  std::lock_guard l(mu_);
  plane_ = stopped_ ? nullptr : plane;
}

void egress::link_made(const runtime::sandbox_info& info) {
  if (!info.link)
    return;
  const auto& k = *info.link;
  auto address = network::parse_address(k.sandbox_address);
  if (!address)
    return;
  network::link_entry e{k.interface, k.host_address, k.sandbox_address};
  std::lock_guard l(mu_);
  if (stopped_)
    return;
  if (auto ok = nft_->run(network::add_link_rules(params_, e)); !ok)
    throw std::runtime_error("cannot add the link of sandbox " + info.id + " to the egress table " +
                             params_.table + ": " + ok.err().message);
  entries_[info.id] = e;
  book_.add_link(*address, network::link_owner{info.id, k.tenant});
}

void egress::link_removed(const std::string& sandbox_id) {
  std::lock_guard l(mu_);
  book_.remove_sandbox(sandbox_id);
  auto it = entries_.find(sandbox_id);
  if (it == entries_.end())
    return;
  if (!stopped_)
    (void)nft_->run(network::remove_link_rules(params_, it->second));
  entries_.erase(it);
}

void egress::stop() {
  {
    std::lock_guard l(mu_);
    if (stopped_)
      return;
  }
  proxy_->stop();
  dns_->stop();
  std::lock_guard l(mu_);
  stopped_ = true;
  plane_ = nullptr;
  if (entries_.empty())
    (void)nft_->run(network::delete_ruleset(params_));
}

std::uint16_t egress::proxy_port() const {
  return proxy_->port();
}

std::uint16_t egress::dns_port() const {
  return dns_->port();
}

bool egress::open(const network::link_owner& who, const std::string& connection_id,
                  const events::net_destination& d) {
  const bool dns = d.protocol == events::net_protocol::dns;
  const auto verdict = decide(who, connection_id, d);
  if (settings_.probe)
    settings_.probe->egress_attempt(dns ? "dns" : "tcp", verdict);
  return std::string_view(verdict) == "allowed";
}

const char* egress::decide(const network::link_owner& who, const std::string& connection_id,
                           const events::net_destination& d) {
  actors::control_plane* plane = nullptr;
  {
    std::lock_guard l(mu_);
    plane = plane_;
  }
  if (plane == nullptr)
    return "refused";
  if (settings_.admit && !settings_.admit(who.tenant))
    return "refused";
  actors::command c;
  c.tenant = who.tenant;
  c.principal = "system";
  c.body = actors::cmd::open_connection{connection_id, d};
  const auto r = plane->call(who.sandbox_id, std::move(c), actors::reply_when::durable);
  if (!r.ok())
    return "refused";
  if (d.protocol == events::net_protocol::dns)
    return r.own_sequence == 0 ? "allowed" : "denied"; // denied: connection_denied logged
  const auto& open = r.state.connections_open;
  return std::find(open.begin(), open.end(), connection_id) != open.end() ? "allowed" : "denied";
}

void egress::closed(const network::link_owner& who, const events::connection_closed& c) {
  actors::control_plane* plane = nullptr;
  {
    std::lock_guard l(mu_);
    plane = plane_;
  }
  if (settings_.probe)
    settings_.probe->egress_bytes(c.bytes_out, c.bytes_in);
  if (plane == nullptr)
    return;
  actors::command cmd;
  cmd.tenant = who.tenant;
  cmd.principal = "system";
  cmd.body = actors::cmd::close_connection{c};
  // Not waited for: a connection can end after its sandbox was deleted (its link went
  // first), and nothing here depends on the answer.
  plane->submit(who.sandbox_id, std::move(cmd), actors::reply_when::durable,
                [](actors::command_reply) {});
}

} // namespace sandboxd::node
