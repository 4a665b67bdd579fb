#include "runtime/host_process.hpp"

#include "runtime/small_text.hpp"

#include <csignal>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

namespace sandboxd::runtime {

std::optional<proc_stat> parse_proc_stat(std::string_view text) {
  auto close = text.rfind(')');
  if (close == std::string_view::npos)
    return std::nullopt;
  std::istringstream f{std::string(text.substr(close + 1))};
  proc_stat s;
  f >> s.state >> s.ppid;
  // Fields 5 to 21 (pgrp ... itrealvalue), then field 22: starttime.
  std::string skip;
  for (int i = 5; i <= 21 && f; ++i)
    f >> skip;
  f >> s.start_ticks;
  if (!f)
    return std::nullopt;
  return s;
}

unsigned long long boot_ticks_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const auto hz = static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK));
  const auto ns = static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ull +
                  static_cast<unsigned long long>(ts.tv_nsec);
  return ns / (1'000'000'000ull / hz);
}

std::optional<host_process> host_process::open(pid_t pid, const check_fn& check) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0)
    return std::nullopt;
  host_process p(unique_fd(fd), pid);
  auto stat = parse_proc_stat(read_small_text("/proc/" + std::to_string(pid) + "/stat"));
  // Alive after the check: the stat read and checked was this process's.
  if (!stat || !check(pid, *stat) || !p.signal(0))
    return std::nullopt;
  return p;
}

std::optional<host_process> host_process::open_child(pid_t pid, const host_process& parent) {
  return open(pid, [&](pid_t, const proc_stat& s) {
    // The parent alive after the stat was read: the ppid named it, not a reuse of its number.
    return s.ppid == parent.pid() && parent.signal(0);
  });
}

bool host_process::signal(int sig) const {
  return ::syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0) == 0;
}

std::vector<host_process> host_process::children() const {
  std::vector<host_process> out;
  std::error_code ec;
  for (auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/task", ec)) {
    std::istringstream in(read_small_file(t.path() / "children"));
    for (pid_t c; in >> c;)
      if (auto h = open_child(c, *this))
        out.push_back(std::move(*h));
  }
  return out;
}

std::vector<host_process> held_descendants(const host_process& root) {
  std::vector<host_process> tree = root.children();
  for (std::size_t i = 0; i < tree.size(); ++i)
    for (auto& c : tree[i].children())
      tree.push_back(std::move(c));
  return tree;
}

std::vector<host_process> stop_held_tree(const host_process& root) {
  std::map<pid_t, host_process> tree;
  for (int round = 0; round < 20; ++round) {
    const std::size_t before = tree.size();
    std::vector<const host_process*> pending{&root};
    while (!pending.empty()) {
      const host_process* p = pending.back();
      pending.pop_back();
      for (auto& c : p->children()) {
        auto it = tree.find(c.pid());
        // A held member that is gone gave its number to the process just opened.
        if (it == tree.end() || !it->second.signal(0))
          it = tree.insert_or_assign(c.pid(), std::move(c)).first;
        it->second.signal(SIGSTOP);
        pending.push_back(&it->second);
      }
    }
    if (round > 0 && tree.size() == before)
      break;
  }
  std::vector<host_process> out;
  for (auto& [pid, p] : tree)
    out.push_back(std::move(p));
  return out;
}

void kill_held_tree(const host_process& root) {
  root.signal(SIGSTOP);
  for (auto& p : stop_held_tree(root))
    p.signal(SIGKILL);
  root.signal(SIGKILL);
}

} // namespace sandboxd::runtime
