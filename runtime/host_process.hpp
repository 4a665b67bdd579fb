// host_process — host processes held by pidfd and signalled through it
// (pidfd_send_signal), never by PID number. A process is opened first and checked after
// the open: its /proc/<pid>/stat (and whatever else the caller's check reads) must say it
// is the process meant — for a child, that its parent is a process already held — and it
// must still be alive after the check. While a process lives its number cannot name
// another one, so what the check read was the held process, and a number reused between
// a walk of /proc and a signal is never hit: the signal goes to the held process or, once
// that one is gone, nowhere.
//
// Used for the host side of crun execs (runtime_cli.hpp); runsc's processes live in
// gVisor's kernel and are signalled through runsc.
#pragma once

#include "runtime/unique_fd.hpp"

#include <functional>
#include <optional>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace sandboxd::runtime {

// What sandboxd reads of /proc/<pid>/stat.
struct proc_stat {
  char state = 0;
  pid_t ppid = 0;
  unsigned long long start_ticks = 0; // clock ticks after boot
};

// Parses the text of /proc/<pid>/stat; the command name in parentheses may itself hold
// spaces and parentheses (the fields follow the last ')'). Empty when malformed.
std::optional<proc_stat> parse_proc_stat(std::string_view text);

// Clock ticks after boot now, on the clock of proc_stat::start_ticks.
unsigned long long boot_ticks_now();

class host_process {
public:
  using check_fn = std::function<bool(pid_t pid, const proc_stat& stat)>;

  // Opens `pid`, held when `check` accepts it after the open and it is alive after that.
  static std::optional<host_process> open(pid_t pid, const check_fn& check);
  // Opens `pid`, held when it is a child of `parent` (checked as above, with `parent`
  // alive after the check).
  static std::optional<host_process> open_child(pid_t pid, const host_process& parent);

  pid_t pid() const { return pid_; }
  // pidfd_send_signal; false once the process is gone (reaped), whatever holds its number.
  bool signal(int sig) const;
  // Its children as they stand now (every thread's), each opened by open_child.
  std::vector<host_process> children() const;

private:
  host_process(unique_fd fd, pid_t pid) : fd_(std::move(fd)), pid_(pid) {}
  unique_fd fd_;
  pid_t pid_ = 0;
};

// Every process below `root` (not `root` itself) as the tree stands now, each held.
std::vector<host_process> held_descendants(const host_process& root);

// Stops the tree under `root` (not `root` itself; stopped processes cannot fork) until
// no new member appears; its members, held.
std::vector<host_process> stop_held_tree(const host_process& root);

// Stops `root` and the tree under it, then kills every member with SIGKILL.
void kill_held_tree(const host_process& root);

} // namespace sandboxd::runtime
