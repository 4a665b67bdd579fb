#include "runtime/overlay_mount.hpp"

#include "runtime/tree_walk.hpp"
#include "runtime/unique_fd.hpp"

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

namespace sandboxd::runtime {
namespace {

// /proc/self/mountinfo escapes space, tab, newline and backslash as octal.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

void sync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
}

} // namespace

void mount_overlay(const overlay_dirs& d) {
  // A volatile overlay leaves this marker behind and refuses to mount again while it
  // exists; the layer below it was synced by unmount_overlay (or, after a crash, holds
  // what reached the disk).
  unique_fd incompat(
    ::open((d.work + "/work/incompat").c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (incompat)
    remove_tree_at(incompat.get(), "volatile");
  std::string opts =
    "lowerdir=" + d.lower + ",upperdir=" + d.upper + ",workdir=" + d.work + ",volatile";
  if (::mount("overlay", d.target.c_str(), "overlay", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "mount overlay on " + d.target);
}

void unmount_overlay(const overlay_dirs& d, bool flush) {
  if (!is_mount_point(d.target))
    return;
  if (flush)
    sync_dir(d.upper); // a volatile overlay does not sync its upper layer itself
  unmount_path(d.target);
}

void unmount_path(const std::string& path) {
  for (int i = 0; i < 50; ++i) {
    if (::umount2(path.c_str(), UMOUNT_NOFOLLOW) == 0 || errno == EINVAL || errno == ENOENT)
      return;
    if (errno != EBUSY)
      throw std::system_error(errno, std::generic_category(), "unmount " + path);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL)
    throw std::system_error(errno, std::generic_category(), "unmount " + path);
}

bool is_mount_point(const std::string& path) {
  // statx says it directly (Linux 5.8+); /proc/self/mountinfo is the fallback.
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) == 0 &&
      (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
    return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mp;
    f >> id >> parent >> dev >> root >> mp;
    if (unescape(mp) == path)
      return true;
  }
  return false;
}

scoped_overlay::scoped_overlay(const overlay_dirs& dirs) : dirs_(dirs) {
  if (!is_mount_point(dirs_.target)) {
    mount_overlay(dirs_);
    mounted_here_ = true;
  }
}

scoped_overlay::~scoped_overlay() {
  if (mounted_here_) {
    try {
      unmount_overlay(dirs_);
    } catch (...) {
      // Left mounted; remove() and the next pause unmount it.
    }
  }
}

} // namespace sandboxd::runtime
