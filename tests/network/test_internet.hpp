// test_internet — the "internet" a network test builds for itself: a network namespace
// joined to the test's own by a veth pair (ix0 198.51.100.1 here, ix1 198.51.100.2 and .3
// and 10.77.0.2 there), with a DNS server on 198.51.100.2 (names below), HTTP on port 80 of
// every address (it answers "hello HOST at ADDRESS" and 3,000 bytes more), a stand-in for TLS
// on 443 (notes who came, answers "tls-ok"), port 8081 that accepts and never answers, and a
// UDP sink on 9999; and what reached each.
// The test must run in a network namespace of its own (private_netns.hpp): the routes it
// adds lead nowhere else, and nothing leaves this machine.
#pragma once

#include "network/dns_message.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/process.hpp"

#include <arpa/inet.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <span>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sandboxd::test {

namespace internet_detail {
inline int bound(int type, const std::string& address, std::uint16_t port) {
  const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("bind " + address + ":" + std::to_string(port));
  if (type == SOCK_STREAM)
    ::listen(fd, 64);
  return fd;
}

} // namespace internet_detail

// The test's internet: its namespace, its servers, and what reached them.
struct internet {
  netns ns;
  int dns = -1, http = -1, https = -1, udp = -1, hold = -1, stop_pipe[2] = {-1, -1};
  std::vector<int> held; // connections to port 8081: accepted, never answered
  std::thread server;
  std::mutex mu;
  std::vector<std::string> questions;  // names the DNS server was asked
  std::vector<std::string> http_hosts; // "ADDRESS Host" of each request served
  std::vector<std::string> tls_peers;  // "ADDRESS" of each connection to port 443
  int udp_datagrams = 0;
  std::map<std::string, std::string> names{{"allowed.test", "198.51.100.2"},
                                           {"unlisted.test", "198.51.100.2"},
                                           {"other.test", "198.51.100.3"},
                                           {"rebind.test", "10.77.0.2"}};

  internet() {
    add_veth("ix0", nullptr, "198.51.100.1/24", "ix1", &ns, "198.51.100.2/24");
    ns.check("ip addr add 198.51.100.3/24 dev ix1 && ip addr add 10.77.0.2/24 dev ix1 && "
             "ip route add 10.201.0.0/24 via 198.51.100.1");
    check_shell("ip route add 10.77.0.0/24 via 198.51.100.2");
    ns.enter([&] {
      dns = internet_detail::bound(SOCK_DGRAM, "198.51.100.2", 53);
      http = internet_detail::bound(SOCK_STREAM, "0.0.0.0", 80);
      https = internet_detail::bound(SOCK_STREAM, "0.0.0.0", 443);
      hold = internet_detail::bound(SOCK_STREAM, "0.0.0.0", 8081);
      udp = internet_detail::bound(SOCK_DGRAM, "0.0.0.0", 9999);
    });
    if (::pipe(stop_pipe) != 0)
      throw std::runtime_error("pipe");
    server = std::thread([this] { serve(); });
  }
  ~internet() {
    [[maybe_unused]] auto w = ::write(stop_pipe[1], "x", 1);
    server.join();
    for (int fd : {dns, http, https, udp, hold, stop_pipe[0], stop_pipe[1]})
      ::close(fd);
    for (int fd : held)
      ::close(fd);
    // At once (a namespace's interfaces go some time after its last holder): the next
    // case makes its own.
    run_shell("ip link del ix0");
  }

  void serve() {
    std::vector<std::uint8_t> buf(4096);
    for (;;) {
      pollfd p[6] = {{dns, POLLIN, 0},          {http, POLLIN, 0},  {udp, POLLIN, 0},
                     {stop_pipe[0], POLLIN, 0}, {https, POLLIN, 0}, {hold, POLLIN, 0}};
      ::poll(p, 6, -1);
      if (p[3].revents)
        return;
      if (p[5].revents) {
        const int c = ::accept(hold, nullptr, nullptr);
        std::lock_guard l(mu);
        held.push_back(c);
      }
      if (p[4].revents) { // not TLS: notes who came and answers a line once the hello is in
        int c = ::accept(https, nullptr, nullptr);
        sockaddr_in local{};
        socklen_t ll = sizeof local;
        ::getsockname(c, reinterpret_cast<sockaddr*>(&local), &ll);
        char addr[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, &local.sin_addr, addr, sizeof addr);
        pollfd cp{c, POLLIN, 0};
        if (::poll(&cp, 1, 5000) > 0 && ::recv(c, buf.data(), buf.size(), 0) > 0) {
          {
            std::lock_guard l(mu);
            tls_peers.push_back(addr);
          }
          ::send(c, "tls-ok\n", 7, MSG_NOSIGNAL);
        }
        ::close(c);
      }
      if (p[0].revents) {
        sockaddr_storage from{};
        socklen_t fl = sizeof from;
        auto n =
          ::recvfrom(dns, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
        auto q = network::parse_query(std::span(buf.data(), std::size_t(n > 0 ? n : 0)));
        if (q) {
          std::vector<network::ip_address> answer;
          auto it = names.find(q.value().name);
          {
            std::lock_guard l(mu);
            questions.push_back(q.value().name_text);
          }
          if (it != names.end())
            answer.push_back(*network::parse_address(it->second));
          auto r = network::make_response(std::span(buf.data(), std::size_t(n)), q.value(),
                                          it == names.end() ? network::dns_rcode::name_error
                                                            : network::dns_rcode::no_error,
                                          answer, 60);
          ::sendto(dns, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), fl);
        }
      }
      if (p[1].revents) {
        int c = ::accept(http, nullptr, nullptr);
        std::string head;
        char ch[1024];
        while (head.find("\r\n\r\n") == std::string::npos) {
          pollfd cp{c, POLLIN, 0};
          if (::poll(&cp, 1, 5000) <= 0)
            break;
          auto n = ::recv(c, ch, sizeof ch, 0);
          if (n <= 0)
            break;
          head.append(ch, std::size_t(n));
        }
        sockaddr_in local{};
        socklen_t ll = sizeof local;
        ::getsockname(c, reinterpret_cast<sockaddr*>(&local), &ll);
        char addr[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, &local.sin_addr, addr, sizeof addr);
        std::string host;
        auto h = head.find("\r\nHost: ");
        if (h != std::string::npos)
          host = head.substr(h + 8, head.find("\r\n", h + 8) - h - 8);
        {
          std::lock_guard l(mu);
          http_hosts.push_back(std::string(addr) + " " + host);
        }
        const std::string body =
          "hello " + host + " at " + addr + "\n" + std::string(3000, 'x') + "\n";
        const std::string r = "HTTP/1.0 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\nConnection: close\r\n\r\n" + body;
        ::send(c, r.data(), r.size(), MSG_NOSIGNAL);
        ::close(c);
      }
      if (p[2].revents) {
        ::recv(udp, buf.data(), buf.size(), 0);
        std::lock_guard l(mu);
        ++udp_datagrams;
      }
    }
  }

  std::vector<std::string> asked() {
    std::lock_guard l(mu);
    return questions;
  }
  std::vector<std::string> served() {
    std::lock_guard l(mu);
    return http_hosts;
  }
  std::vector<std::string> tls() {
    std::lock_guard l(mu);
    return tls_peers;
  }
  std::size_t holding() {
    std::lock_guard l(mu);
    return held.size();
  }
  int datagrams() {
    std::lock_guard l(mu);
    return udp_datagrams;
  }
};

} // namespace sandboxd::test
