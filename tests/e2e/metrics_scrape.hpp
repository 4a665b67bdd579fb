// metrics_scrape — the daemon's Prometheus endpoint read by the e2e tests: a free loopback
// port for --metrics-addr, and one scrape as "name{labels}" -> value.
#pragma once

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <map>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace sandboxd::test {

inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// GET /metrics: the samples, "name{labels}" -> value.
inline std::map<std::string, double> scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE_MESSAGE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0,
                        "metrics endpoint on port " << port << " does not answer");
  // A scrape that does not answer fails the case instead of hanging it.
  const timeval limit{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  BOOST_REQUIRE(::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    resp.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  BOOST_REQUIRE_MESSAGE(resp.rfind("HTTP/1.", 0) == 0 && resp.find(" 200 ") != std::string::npos,
                        "metrics answered: " << resp.substr(0, 200));
  std::map<std::string, double> out;
  std::istringstream in(resp.substr(resp.find("\r\n\r\n") + 4));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    const auto sp = line.rfind(' ');
    if (sp != std::string::npos)
      out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

inline double sample(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

} // namespace sandboxd::test
