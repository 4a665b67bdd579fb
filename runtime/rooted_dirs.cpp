#include "runtime/rooted_dirs.hpp"

#include "runtime/tree_walk.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

struct parent_and_name {
  unique_fd root;
  unique_fd parent; // O_PATH, inside the root
  std::string name;
};

outcome<parent_and_name> open_parent(const std::string& root, std::string_view path,
                                     bool create_parents = false,
                                     std::optional<file_owner> owner = std::nullopt) {
  auto split = split_in_root(path);
  if (!split)
    return split.err();
  auto rootfd = open_root_dir(root);
  if (!rootfd)
    return rootfd.err();
  parent_and_name out{std::move(rootfd.value()), unique_fd(), split->second};
  if (create_parents) {
    auto dir = open_dir_creating_in_root(out.root.get(), split->first, path, owner);
    if (!dir)
      return dir.err();
    out.parent = std::move(dir.value());
  } else {
    out.parent = unique_fd(open_in_root(out.root.get(), split->first, O_PATH | O_DIRECTORY));
    if (!out.parent)
      return error_of_errno(errno, path);
  }
  return out;
}

} // namespace

outcome<std::pair<std::string, std::string>> split_in_root(std::string_view path) {
  auto rel = path_in_root(path);
  if (!rel)
    return rel.err();
  std::string r = rel.value();
  while (!r.empty() && r.back() == '/')
    r.pop_back();
  if (r.empty() || r == ".")
    return make_error(errc::invalid_argument,
                      std::string(path) + " is the sandbox's root directory; name a path in it");
  size_t slash = r.rfind('/');
  std::string dir = slash == std::string::npos ? "." : r.substr(0, slash);
  std::string name = slash == std::string::npos ? r : r.substr(slash + 1);
  if (name == "." || name == "..")
    return make_error(errc::invalid_argument,
                      std::string(path) + " ends in '" + name + "'; name the entry itself");
  return std::pair{dir, name};
}

outcome<void> make_dir_in_root(const std::string& root, std::string_view path, bool parents,
                               std::uint32_t mode, std::optional<file_owner> owner) {
  auto p = open_parent(root, path, parents, owner);
  if (!p)
    return p.err();
  if (::mkdirat(p->parent.get(), p->name.c_str(), 0700) != 0) {
    int e = errno;
    struct stat st {};
    if (e == EEXIST && parents &&
        ::fstatat(p->parent.get(), p->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode))
      return {}; // mkdir -p: already there
    return error_of_errno(e, path);
  }
  // The new directory by handle, never through a symlink swapped in for it: its owner
  // and exact mode (no umask) are set on what was made.
  unique_fd made(
    ::openat(p->parent.get(), p->name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!made)
    return error_of_errno(errno, path);
  if (owner && ::fchown(made.get(), owner->uid, owner->gid) != 0)
    return error_of_errno(errno, path);
  if (::fchmod(made.get(), mode & 0777) != 0)
    return error_of_errno(errno, path);
  return {};
}

outcome<void> remove_in_root(const std::string& root, std::string_view path, bool recursive) {
  auto p = open_parent(root, path);
  if (!p)
    return p.err();
  struct stat st {};
  if (::fstatat(p->parent.get(), p->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return error_of_errno(errno, path);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(p->parent.get(), p->name.c_str(), 0) != 0)
      return error_of_errno(errno, path);
    return {};
  }
  if (!recursive) {
    if (::unlinkat(p->parent.get(), p->name.c_str(), AT_REMOVEDIR) != 0)
      return error_of_errno(errno == EEXIST ? ENOTEMPTY : errno, path);
    return {};
  }
  try {
    remove_tree_at(p->parent.get(), p->name);
  } catch (const std::system_error& e) {
    return error_of_errno(e.code().value(), path);
  }
  return {};
}

outcome<void> rename_in_root(const std::string& root, std::string_view from, std::string_view to) {
  auto f = open_parent(root, from);
  if (!f)
    return f.err();
  auto t = open_parent(root, to);
  if (!t)
    return t.err();
  if (::renameat(f->parent.get(), f->name.c_str(), t->parent.get(), t->name.c_str()) != 0) {
    int e = errno;
    struct stat st {};
    bool from_missing = ::fstatat(f->parent.get(), f->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0;
    return error_of_errno(e, e == ENOENT && !from_missing ? to : from);
  }
  return {};
}

} // namespace sandboxd::runtime
