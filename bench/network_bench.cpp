// network_bench — what sandboxd's egress costs (docs/network.md, docs/performance.md). One
// node in this process, in a network namespace of the bench's own, with a crun sandbox whose
// policy allows the bench's "internet" (another namespace, joined to the node by a veth
// pair, with a server that sends N bytes on request). The clients run in threads that
// entered the sandbox's network namespace: their traffic leaves by the sandbox's link and is
// judged by the egress table, the proxy and the sandbox's actor exactly as a process inside
// would be (each connection an event logged before it is dialled).
//
//   egress_mib_per_s        one connection reading --mib MiB through the proxy
//   direct_mib_per_s        the same transfer from the node's namespace straight to the same
//                           server (no link, no table, no proxy), same run
//   connect_p50_ms          connect, a request and the first byte of the answer, through the
//                           proxy (the actor's verdict is logged, fsync'd, before the dial)
//   direct_connect_p50_ms   the same without the proxy
//
// The machine is shared: the load average is printed with the figures.
// Usage: network_bench [--json] [--mib N] [--connects N]
#include "node/egress.hpp"
#include "node/node.hpp"
#include "node/runtime_set.hpp"
#include "runtime/data_entry.hpp"
#include "tests/network/socket_probe.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/netns.hpp"
#include "tests/support/node_cleanup.hpp"
#include "tests/support/temp_dir.hpp"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ev = sandboxd::events;
namespace nd = sandboxd::node;
namespace cmd = sandboxd::actors::cmd;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr const char* k_server = "198.51.100.2";
constexpr std::uint16_t k_port = 9000;

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The internet's server: for each connection, reads a decimal count and a newline, sends that
// many bytes, closes.
void serve(int listener, int stop) {
  static const std::vector<char> block(1 << 20, 'x');
  for (;;) {
    pollfd p[2] = {{listener, POLLIN, 0}, {stop, POLLIN, 0}};
    ::poll(p, 2, -1);
    if (p[1].revents)
      return;
    const int c = ::accept(listener, nullptr, nullptr);
    if (c < 0)
      continue;
    std::thread([c] {
      std::string line;
      char ch;
      while (::recv(c, &ch, 1, 0) == 1 && ch != '\n')
        line += ch;
      auto left = std::strtoull(line.c_str(), nullptr, 10);
      while (left > 0) {
        const auto n =
          ::send(c, block.data(), std::min<std::size_t>(left, block.size()), MSG_NOSIGNAL);
        if (n <= 0)
          break;
        left -= static_cast<std::size_t>(n);
      }
      ::close(c);
    }).detach();
  }
}

// Asks the server for `bytes` and reads them all: the time from connect to the last byte (or
// to the first byte when `first_only`).
double fetch(std::uint64_t bytes, bool first_only) {
  const auto t0 = steady::now();
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(k_port);
  ::inet_pton(AF_INET, k_server, &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("network_bench: cannot connect to the server");
  }
  const std::string req = std::to_string(bytes) + "\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::vector<char> buf(1 << 20);
  std::uint64_t got = 0;
  while (got < bytes) {
    const auto n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0)
      break;
    got += static_cast<std::uint64_t>(n);
    if (first_only)
      break;
  }
  ::close(fd);
  if (got == 0 || (!first_only && got < bytes))
    throw std::runtime_error("network_bench: the transfer ended early (" + std::to_string(got) +
                             " of " + std::to_string(bytes) + " bytes)");
  return ms_between(t0, steady::now());
}

double p50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::uint64_t mib = 256;
  int connects = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--mib" && i + 1 < argc)
      mib = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--connects" && i + 1 < argc)
      connects = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: network_bench [--json] [--mib N] [--connects N]\n");
      return 2;
    }
  }
  if (::geteuid() != 0 || nd::runtime_unavailable(ev::runtime_kind::crun)) {
    std::fprintf(stderr, "network_bench: needs root and crun\n");
    return 77;
  }
  // A namespace of the bench's own: the node, its links and its table live there.
  if (::unshare(CLONE_NEWNET) != 0 || std::system("ip link set lo up") != 0) {
    std::fprintf(stderr, "network_bench: cannot make a network namespace\n");
    return 1;
  }
  spdlog::set_level(spdlog::level::warn);
  sandboxd::test::netns internet;
  sandboxd::test::add_veth("ix0", nullptr, "198.51.100.1/24", "ix1", &internet, "198.51.100.2/24");
  int listener = -1;
  internet.enter([&] {
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(k_port);
    ::inet_pton(AF_INET, k_server, &a.sin_addr);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener, 256) != 0)
      throw std::runtime_error("network_bench: cannot listen in the internet");
  });
  int stop[2];
  if (::pipe(stop) != 0)
    return 1;
  std::thread server([&] { serve(listener, stop[0]); });

  sandboxd::test::temp_dir dir("bench-network");
  ::chmod(dir.path().c_str(), 0711);
  sandboxd::test::guardian cleanup(sandboxd::test::node_cleanup_command(
    dir.path(),
    {sandboxd::runtime::entry_path(dir.path() + "/data", "/run/sandboxd"),
     sandboxd::runtime::entry_path(dir.path() + "/data/runtimes/crun", "/run/sandboxd")}));
  nd::node_config c;
  c.data_dir = dir / "data";
  c.runtimes = {ev::runtime_kind::crun};
  c.network.link_range = "10.201.0.0/24";
  c.network.upstream_dns = k_server;
  int rc = 0;
  {
    nd::node n(c);
    n.start();
    ev::created spec;
    spec.template_name = "base";
    spec.limits = {256, 1000, 128, 0};
    spec.runtime = ev::runtime_kind::crun;
    spec.network.mode = ev::network_mode::allow_list;
    spec.network.allowed_hosts = {"198.51.100.0/24"};
    sandboxd::actors::command create;
    create.tenant = "bench";
    create.principal = "bench";
    create.body = cmd::create{spec};
    auto r = n.call("", create);
    if (!r.ok()) {
      std::fprintf(stderr, "network_bench: create: %s\n", r.failure->message.c_str());
      return 1;
    }
    const auto id = r.state.sandbox_id;
    const auto link = n.driver(ev::runtime_kind::crun)->inspect(id).value().link;
    const std::uint64_t bytes = mib << 20;
    double egress_ms = 0, direct_ms = 0;
    std::vector<double> egress_connect, direct_connect;
    try {
      // Warm both ways once, then alternate, so that load changes hit both alike.
      sandboxd::test::probe::in_netns(link->netns_path, [&] { fetch(1 << 20, false); });
      fetch(1 << 20, false);
      sandboxd::test::probe::in_netns(link->netns_path, [&] { egress_ms = fetch(bytes, false); });
      direct_ms = fetch(bytes, false);
      for (int i = 0; i < connects; ++i) {
        sandboxd::test::probe::in_netns(link->netns_path,
                                        [&] { egress_connect.push_back(fetch(1, true)); });
        direct_connect.push_back(fetch(1, true));
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      rc = 1;
    }
    n.call(id, [&] {
      sandboxd::actors::command d = create;
      d.body = cmd::remove{};
      return d;
    }());
    n.stop();
    if (rc == 0) {
      double load[3] = {0, 0, 0};
      ::getloadavg(load, 3);
      const double egress = static_cast<double>(mib) / (egress_ms / 1000);
      const double direct = static_cast<double>(mib) / (direct_ms / 1000);
      std::printf("network_bench: %u cores, load average %.1f\n",
                  std::thread::hardware_concurrency(), load[0]);
      std::printf("  %llu MiB through the egress proxy: %.1f MiB/s; direct: %.1f MiB/s (%.2f of "
                  "direct)\n",
                  static_cast<unsigned long long>(mib), egress, direct, egress / direct);
      std::printf("  connect + first byte, p50 of %d: through the proxy %.2f ms; direct %.2f ms\n",
                  connects, p50(egress_connect), p50(direct_connect));
      if (json)
        std::printf("{\"egress_mib_per_s\": %.1f, \"direct_mib_per_s\": %.1f, \"connect_p50_ms\": "
                    "%.3f, \"direct_connect_p50_ms\": %.3f, \"mib\": %llu, \"connects\": %d, "
                    "\"load_average\": %.1f}\n",
                    egress, direct, p50(egress_connect), p50(direct_connect),
                    static_cast<unsigned long long>(mib), connects, load[0]);
    }
  }
  [[maybe_unused]] auto w = ::write(stop[1], "x", 1);
  server.join();
  return rc;
}
