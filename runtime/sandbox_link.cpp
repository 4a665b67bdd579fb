#include "runtime/sandbox_link.hpp"

#include "runtime/child_process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <net/if.h>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

constexpr long k_nsfs_magic = 0x6e736673;

std::string dotted(std::uint32_t host_order) {
  in_addr a{htonl(host_order)};
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

void run(const std::vector<std::string>& argv, const std::string& step,
         std::optional<std::string> in = std::nullopt) {
  process_options o;
  o.argv = argv;
  o.stdin_data = std::move(in);
  o.timeout = std::chrono::seconds(30);
  auto r = run_process(o);
  if (r.exit_code != 0)
    throw std::runtime_error("sandbox link: " + step + " failed (exit " +
                             std::to_string(r.exit_code) + "): " + r.err + r.out);
}

bool is_nsfs(const std::string& path) {
  struct statfs f {};
  return ::statfs(path.c_str(), &f) == 0 && f.f_type == k_nsfs_magic;
}

void write_sysctl(const std::string& path, const char* value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return; // IPv6 may be off on this host: nothing to turn off
  ssize_t n = ::write(fd, value, std::char_traits<char>::length(value));
  ::close(fd);
  if (n < 0)
    throw std::runtime_error("sandbox link: cannot write " + path);
}

// Whether this host runs IPv6 at all (a kernel booted with ipv6.disable=1 has no
// /proc/sys/net/ipv6): without it a sandbox's IPv6 attempts fail inside it.
bool ipv6_available() {
  return ::access("/proc/sys/net/ipv6/conf/all", F_OK) == 0;
}

const std::string& ip_program() {
  static const std::string p = find_program("ip");
  return p;
}

} // namespace

std::optional<link_range> parse_link_range(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos)
    return std::nullopt;
  in_addr a{};
  if (::inet_pton(AF_INET, text.substr(0, slash).c_str(), &a) != 1)
    return std::nullopt;
  int prefix = 0;
  try {
    prefix = std::stoi(text.substr(slash + 1));
  } catch (...) {
    return std::nullopt;
  }
  if (prefix < 8 || prefix > 30)
    return std::nullopt;
  std::uint32_t base = ntohl(a.s_addr);
  std::uint32_t mask = ~std::uint32_t(0) << (32 - prefix);
  if ((base & ~mask) != 0)
    return std::nullopt;
  return link_range{base, std::uint8_t(prefix)};
}

std::string link_interface_prefix(const std::string& instance) {
  return "sx" + instance.substr(0, 6);
}

sandbox_link link_of(const link_range& range, std::uint32_t slot, const std::string& instance,
                     const std::string& netns_path) {
  sandbox_link l;
  l.slot = slot;
  l.netns_path = netns_path;
  std::uint32_t block = range.base + 4 * slot;
  char name[IFNAMSIZ];
  // The /30's number in its /10: unique for the disjoint ranges of one node's drivers.
  std::snprintf(name, sizeof name, "%s%05x", link_interface_prefix(instance).c_str(),
                (block >> 2) & 0xfffff);
  l.host_interface = name;
  l.host_address = dotted(block + 1);
  l.sandbox_address = dotted(block + 2);
  char v6[64];
  std::snprintf(v6, sizeof v6, "fd73:6278::%x:%x", (block + 2) >> 16, (block + 2) & 0xffff);
  l.sandbox_address6 = v6;
  return l;
}

void make_link(const sandbox_link& l) {
  remove_link(l);
  int fd = ::open(l.netns_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST)
    throw std::runtime_error("sandbox link: cannot create " + l.netns_path);
  if (fd >= 0)
    ::close(fd);
  static const std::string unshare = find_program("unshare");
  static const std::string nsenter = find_program("nsenter");
  run({unshare, "--net=" + l.netns_path, "true"}, "making network namespace " + l.netns_path);
  const std::string cidr = "/" + std::to_string(l.prefix);
  run({ip_program(), "link", "add", l.host_interface, "type", "veth", "peer", "name", "eth0",
       "netns", l.netns_path},
      "making veth " + l.host_interface);
  const std::string conf6 = "/proc/sys/net/ipv6/conf/" + l.host_interface + "/";
  // No address of its own but fe80::1, no router advertisements, no forwarding.
  write_sysctl(conf6 + "addr_gen_mode", "1");
  write_sysctl(conf6 + "accept_ra", "0");
  write_sysctl(conf6 + "forwarding", "0");
  write_sysctl("/proc/sys/net/ipv4/conf/" + l.host_interface + "/rp_filter", "1");
  write_sysctl("/proc/sys/net/ipv4/conf/" + l.host_interface + "/forwarding", "0");
  write_sysctl("/proc/sys/net/ipv4/conf/" + l.host_interface + "/accept_redirects", "0");
  const bool v6 = ipv6_available();
  std::string host = "addr add " + l.host_address + cidr + " dev " + l.host_interface + "\n";
  if (v6)
    host += "addr add fe80::1/64 dev " + l.host_interface + " nodad\n";
  host += "link set " + l.host_interface + " up\n";
  if (v6)
    host += "route add " + l.sandbox_address6 + "/128 dev " + l.host_interface + "\n";
  run({ip_program(), "-batch", "-"}, "addressing " + l.host_interface, host);
  std::string inside = "link set lo up\naddr add " + l.sandbox_address + cidr +
                       " dev eth0\nlink set eth0 up\nroute add default via " + l.host_address +
                       "\n";
  if (v6)
    inside += "addr add " + l.sandbox_address6 +
              "/128 dev eth0 nodad\nroute add ::/0 via fe80::1 dev eth0 src " + l.sandbox_address6 +
              "\n";
  run({nsenter, "--net=" + l.netns_path, ip_program(), "-batch", "-"},
      "addressing the sandbox side of " + l.host_interface, inside);
}

void remove_link(const sandbox_link& l) {
  if (::if_nametoindex(l.host_interface.c_str()) != 0) {
    process_options o;
    o.argv = {ip_program(), "link", "del", l.host_interface};
    o.timeout = std::chrono::seconds(30);
    run_process(o); // gone meanwhile is as good
  }
  while (is_nsfs(l.netns_path))
    if (::umount2(l.netns_path.c_str(), MNT_DETACH) != 0)
      break;
  ::unlink(l.netns_path.c_str());
}

bool link_present(const sandbox_link& l) {
  return is_nsfs(l.netns_path) && ::if_nametoindex(l.host_interface.c_str()) != 0;
}

} // namespace sandboxd::runtime
