#include "runtime/id_map.hpp"

#include "runtime/orphan_reaper.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdexcept>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void write_map(pid_t pid, const char* which, id_range r) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + which;
  std::string map = "0 " + std::to_string(r.base) + " " + std::to_string(id_range::size) + "\n";
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), map.data(), map.size()) != static_cast<ssize_t>(map.size()))
    fail("write " + path);
}

} // namespace

id_ranges::id_ranges(std::uint32_t first, std::uint32_t count) : first_(first), count_(count) {
  if (first % id_range::size != 0 || first == 0 ||
      std::uint64_t{first} + std::uint64_t{count} * id_range::size > (1ull << 32) - 1)
    throw std::invalid_argument("host id ranges must start at a non-zero multiple of 65536 and "
                                "end below 2^32");
}

std::optional<id_range> id_ranges::take() {
  std::lock_guard<std::mutex> g(mu_);
  std::uint32_t slot = 0;
  for (auto s : taken_) {
    if (s != slot)
      break;
    ++slot;
  }
  if (slot >= count_)
    return std::nullopt;
  taken_.insert(slot);
  return id_range{first_ + slot * id_range::size};
}

bool id_ranges::mark_taken(id_range r) {
  if (r.base < first_ || (r.base - first_) % id_range::size != 0 ||
      (r.base - first_) / id_range::size >= count_)
    return false;
  std::lock_guard<std::mutex> g(mu_);
  taken_.insert((r.base - first_) / id_range::size);
  return true;
}

void id_ranges::release(id_range r) {
  if (r.base < first_)
    return;
  std::lock_guard<std::mutex> g(mu_);
  taken_.erase((r.base - first_) / id_range::size);
}

unique_fd make_userns(id_range r) {
  // A child in a new user namespace holds it while the maps are written and it is opened.
  // It never execs, so it closes every descriptor it inherited but its end of the pipe:
  // otherwise it would hold the file log's lock, and the write end of another such child's
  // pipe made by another thread (two children each waiting for the other's end of file).
  // The pipe is made under the fork lock for the same reason.
  int p[2];
  pid_t pid;
  unique_fd rd, wr;
  {
    auto lock = orphan_reaper::fork_lock();
    if (::pipe2(p, O_CLOEXEC) != 0)
      fail("pipe2");
    rd = unique_fd(p[0]);
    wr = unique_fd(p[1]);
    pid = static_cast<pid_t>(
      ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
    if (pid == 0) {
      char c;
      const unsigned keep = static_cast<unsigned>(p[0]);
      if (keep > 0)
        ::syscall(SYS_close_range, 0u, keep - 1, 0u);
      ::syscall(SYS_close_range, keep + 1, ~0u, 0u);
      (void)!::read(p[0], &c, 1); // returns at end of file: the parent is done
      ::_exit(0);
    }
    if (pid < 0)
      fail("clone a user namespace");
    orphan_reaper::note_own_child(pid);
  }
  unique_fd ns;
  int err = 0;
  try {
    write_map(pid, "uid_map", r);
    write_map(pid, "gid_map", r);
    ns = unique_fd(
      ::open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns)
      err = errno;
  } catch (const std::system_error& e) {
    err = e.code().value();
  }
  wr.reset();
  ::waitpid(pid, nullptr, 0);
  orphan_reaper::forget_own_child(pid);
  if (err != 0) {
    errno = err;
    fail("make the user namespace of host ids " + std::to_string(r.base));
  }
  return ns;
}

namespace {

void mount_idmapped_with(int ns_fd, int source, const std::string& target) {
  unique_fd tree(static_cast<int>(
    ::syscall(SYS_open_tree, source, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  if (!tree)
    fail("clone the mount for " + target);
  mount_attr a{};
  a.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  a.userns_fd = static_cast<std::uint64_t>(ns_fd);
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &a, sizeof a) != 0)
    fail("idmap the mount for " + target);
  if (::syscall(SYS_move_mount, tree.get(), "", AT_FDCWD, target.c_str(),
                MOVE_MOUNT_F_EMPTY_PATH) != 0)
    fail("mount on " + target);
}

} // namespace

void mount_idmapped(int source, const std::string& target, id_range r) {
  unique_fd ns = make_userns(r);
  mount_idmapped_with(ns.get(), source, target);
}

void mount_idmapped(const std::vector<std::pair<int, std::string>>& mounts, id_range r) {
  if (mounts.empty())
    return;
  unique_fd ns = make_userns(r);
  for (const auto& [source, target] : mounts)
    mount_idmapped_with(ns.get(), source, target);
}

} // namespace sandboxd::runtime
