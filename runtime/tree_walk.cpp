#include "runtime/tree_walk.hpp"

#include "runtime/beneath.hpp"
#include "runtime/names.hpp"
#include "runtime/unique_fd.hpp"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace sandboxd::runtime {
namespace {

[[noreturn]] void fail(int e, const std::string& what) {
  throw std::system_error(e, std::generic_category(), what);
}

// The directory `name` directly beneath `parent`, opened for reading (see beneath.hpp).
unique_fd open_subdir(int parent, const std::string& name) {
  return open_beneath(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
}

struct level {
  dev_t dev;
  ino_t ino;
  std::string name;                 // in its parent
  std::vector<std::string> subdirs; // still to visit
};

// Reads the directory `dir`: every entry that is not a directory goes to on_leaf at once,
// the names of subdirectories are returned.
std::vector<std::string> scan(int dir, const tree_visitor& v) {
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail(errno, "open directory to read");
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    int e = errno;
    ::close(fd);
    fail(e, "fdopendir");
  }
  std::vector<std::string> subdirs;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..")
      continue;
    struct stat st {};
    if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT)
        continue; // gone meanwhile
      int err = errno;
      ::closedir(d);
      fail(err, "stat " + n);
    }
    if (S_ISDIR(st.st_mode))
      subdirs.push_back(std::move(n));
    else if (v.on_leaf)
      v.on_leaf(dir, n, st);
    errno = 0;
  }
  int err = errno;
  ::closedir(d);
  if (err != 0)
    fail(err, "readdir");
  return subdirs;
}

// Enters `name` below `parent` and pushes its level, or handles why it cannot be entered.
// False when it was not entered.
bool descend(int parent, const std::string& name, const tree_visitor& v, unique_fd& cur,
             std::vector<level>& stack) {
  unique_fd child = open_subdir(parent, name);
  if (!child) {
    int e = errno;
    if (e == ENOENT)
      return false;
    struct stat st {};
    bool leaf_now = e == ENOTDIR || e == ELOOP || (e == EXDEV && v.skip_mount_points);
    if (leaf_now && ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (v.on_leaf)
        v.on_leaf(parent, name, st); // swapped for a symlink or file, or a skipped mount
      return false;
    }
    fail(e, "open directory " + name);
  }
  struct stat st {};
  if (::fstat(child.get(), &st) != 0)
    fail(errno, "stat " + name);
  level l{st.st_dev, st.st_ino, name, {}};
  l.subdirs = scan(child.get(), v);
  stack.push_back(std::move(l));
  cur = std::move(child);
  return true;
}

} // namespace

void walk_tree(int parent_fd, const std::string& name, const tree_visitor& v) {
  require_plain_component(name, "tree to walk");
  std::vector<level> stack;
  unique_fd cur;
  if (!descend(parent_fd, name, v, cur, stack))
    return;
  for (;;) {
    level& top = stack.back();
    if (!top.subdirs.empty()) {
      std::string next = std::move(top.subdirs.back());
      top.subdirs.pop_back();
      descend(cur.get(), next, v, cur, stack);
      continue;
    }
    std::string done = std::move(top.name);
    if (stack.size() == 1) {
      cur.reset();
      if (v.on_dir_done)
        v.on_dir_done(parent_fd, done);
      return;
    }
    // Up by "..", which must be the directory the walk came down from.
    unique_fd up(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!up || ::fstat(up.get(), &st) != 0)
      fail(errno, "open .. of " + done);
    const level& parent = stack[stack.size() - 2];
    if (st.st_dev != parent.dev || st.st_ino != parent.ino)
      fail(ESTALE, "the tree changed while it was walked (" + done + " was moved)");
    stack.pop_back();
    cur = std::move(up);
    if (v.on_dir_done)
      v.on_dir_done(cur.get(), done);
  }
}

void remove_tree_at(int parent_fd, const std::string& name) {
  tree_visitor v;
  v.on_leaf = [](int dir, const std::string& n, const struct stat&) {
    if (::unlinkat(dir, n.c_str(), 0) != 0 && errno != ENOENT)
      fail(errno, "unlink " + n);
  };
  v.on_dir_done = [](int dir, const std::string& n) {
    if (::unlinkat(dir, n.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
      fail(errno, "rmdir " + n);
  };
  // A plain file or symlink where the tree was expected is deleted as itself.
  struct stat st {};
  require_plain_component(name, "tree to remove");
  if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    v.on_leaf(parent_fd, name, st);
    return;
  }
  walk_tree(parent_fd, name, v);
}

std::uint64_t tree_bytes_at(int parent_fd, const std::string& name) {
  std::uint64_t total = 0;
  tree_visitor v;
  v.skip_mount_points = true;
  v.on_leaf = [&](int, const std::string&, const struct stat& st) {
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
      total += static_cast<std::uint64_t>(st.st_size);
  };
  walk_tree(parent_fd, name, v);
  return total;
}

} // namespace sandboxd::runtime
