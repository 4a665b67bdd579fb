#include "network/dns_relay.hpp"

#include "base/worker_pool.hpp"
#include "network/dns_message.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace sandboxd::network {
namespace {

using steady = std::chrono::steady_clock;

struct upstream_answer {
  bool ok = false;
  dns_answer answer;
};

// One A question to the upstream server over UDP (a truncated answer counts as none).
upstream_answer ask_upstream(const socket_address& upstream, std::chrono::milliseconds timeout,
                             const std::string& name) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  const auto id = static_cast<std::uint16_t>(rng());
  const auto q = make_query(id, name, dns_type::a);
  sockaddr_storage s{};
  const auto len = to_sockaddr(upstream, s);
  const int fd = ::socket(s.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  upstream_answer out;
  if (fd < 0)
    return out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&s), len) == 0 &&
      ::send(fd, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size())) {
    const auto deadline = steady::now() + timeout;
    std::vector<std::uint8_t> buf(4096);
    while (true) {
      const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
      pollfd p{fd, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0)
        break;
      const auto n = ::recv(fd, buf.data(), buf.size(), 0);
      if (n <= 0)
        break;
      auto a =
        parse_response(std::span(buf.data(), static_cast<std::size_t>(n)), id, name, dns_type::a);
      if (!a) // not the answer to this question (spoofed or late): wait on
        continue;
      out.ok = !a.value().truncated;
      out.answer = std::move(a).value();
      break;
    }
  }
  ::close(fd);
  return out;
}

bool read_all(int fd, std::uint8_t* p, std::size_t n, int wake) {
  while (n > 0) {
    pollfd f[2] = {{fd, POLLIN, 0}, {wake, POLLIN, 0}};
    if (::poll(f, 2, 10000) <= 0 || f[1].revents)
      return false;
    const auto r = ::recv(fd, p, n, 0);
    if (r <= 0)
      return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

} // namespace

dns_relay::dns_relay(dns_relay_options options, egress_book& book, egress_decider& decider)
    : options_(std::move(options)), book_(book), decider_(decider) {
  if (::pipe2(wake_, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("dns relay: pipe: ") + std::strerror(errno));
  try {
    udp_ = bind_any_v4("dns relay", SOCK_DGRAM, options_.port);
    port_ = bound_port(udp_);
    tcp_ = std::make_unique<tcp_acceptor>("dns relay", port_, options_.max_tcp, wake_[0],
                                          [this](int fd) { serve_tcp(fd); });
  } catch (...) {
    if (udp_ >= 0)
      ::close(udp_);
    ::close(wake_[0]);
    ::close(wake_[1]);
    throw;
  }
  pool_ = std::make_unique<worker_pool>(options_.threads, "sbd-dns");
  udp_thread_ = std::thread([this] { udp_loop(); });
}

dns_relay::~dns_relay() {
  stop();
}

void dns_relay::stop() {
  if (stopping_.exchange(true))
    return;
  const char c = 1;
  [[maybe_unused]] auto w = ::write(wake_[1], &c, 1);
  udp_thread_.join();
  tcp_->stop();
  pool_.reset(); // runs what was queued (answers are sent to no one listening, or dropped)
  ::close(udp_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

std::vector<std::uint8_t> dns_relay::answer(const ip_address& from,
                                            std::span<const std::uint8_t> query) {
  const auto owner = book_.owner_of(from);
  if (!owner)
    return {};
  auto q = parse_query(query);
  if (!q)
    return {}; // not a question this relay answers (no id to answer it by safely)
  const auto& question = q.value();
  events::net_destination d;
  d.protocol = events::net_protocol::dns;
  d.name = question.name; // "" for a name that is not a host name: never allowed
  d.source = events::name_source::dns_question;
  d.port = 53;
  if (!decider_.open(*owner, "", d))
    return make_response(query, question, dns_rcode::refused);
  if (question.type != dns_type::a)
    return make_response(query, question, dns_rcode::no_error);
  const auto up = ask_upstream(options_.upstream, options_.upstream_timeout, question.name);
  if (!up.ok)
    return make_response(query, question, dns_rcode::server_failure);
  if (up.answer.rcode != dns_rcode::no_error)
    return make_response(query, question, up.answer.rcode);
  // At most 16 addresses: the answer fits a datagram of 512 bytes whatever the name.
  auto addresses = up.answer.addresses;
  if (addresses.size() > 16)
    addresses.resize(16);
  book_.note_answer(owner->sandbox_id, question.name, addresses,
                    std::chrono::seconds(up.answer.ttl), steady::now());
  return make_response(query, question, dns_rcode::no_error, addresses, up.answer.ttl);
}

void dns_relay::udp_loop() {
  std::vector<std::uint8_t> buf(k_dns_max_udp * 8);
  while (!stopping_) {
    pollfd p[2] = {{udp_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR)
      return;
    if (p[1].revents)
      return;
    if (!(p[0].revents & POLLIN))
      continue;
    sockaddr_storage from{};
    socklen_t fl = sizeof from;
    const auto n =
      ::recvfrom(udp_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n <= 0)
      continue;
    const auto src = from_sockaddr(from);
    if (!src)
      continue;
    {
      std::lock_guard l(mu_);
      if (udp_queued_ >= 1024) // a flood waits for nothing: dropped, as a lost datagram
        continue;
      ++udp_queued_;
    }
    pool_->post(
      [this, src = *src, from, fl, q = std::vector<std::uint8_t>(buf.begin(), buf.begin() + n)] {
        auto a = answer(src.address, q);
        if (!a.empty() && a.size() <= k_dns_max_udp) {
          ::sendto(udp_, a.data(), a.size(), 0, reinterpret_cast<const sockaddr*>(&from), fl);
        }
        std::lock_guard l(mu_);
        --udp_queued_;
      });
  }
}

void dns_relay::serve_tcp(int fd) {
  const auto peer = peer_of(fd);
  if (!peer)
    return;
  for (int asked = 0; asked < 64 && !stopping_; ++asked) {
    std::uint8_t len[2];
    if (!read_all(fd, len, 2, wake_[0]))
      return;
    std::vector<std::uint8_t> q((std::size_t{len[0]} << 8) | len[1]);
    if (q.empty() || !read_all(fd, q.data(), q.size(), wake_[0]))
      return;
    auto a = answer(peer->address, q);
    if (a.empty())
      return;
    std::vector<std::uint8_t> out{static_cast<std::uint8_t>(a.size() >> 8),
                                  static_cast<std::uint8_t>(a.size())};
    out.insert(out.end(), a.begin(), a.end());
    if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size()))
      return;
  }
}

} // namespace sandboxd::network
