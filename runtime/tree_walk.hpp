// tree_walk — visits a directory tree by handle, never by path string, for the two jobs
// that must not be fooled by what a sandbox planted in it: deleting a tree and metering
// its bytes.
//
// Guarantees:
// - No path string is built, so depth is unlimited (a tree nested far past PATH_MAX is
//   walked whole) and only one directory is open at a time (plus the one being left).
// - Every step down opens the child by handle with openat2(RESOLVE_BENEATH |
//   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) and O_NOFOLLOW: a
//   symlink is reported as a symlink and never followed, also when a directory is swapped
//   for one while the walk runs, and no mount point is entered.
// - Every step up opens ".." and checks that it is the directory (device, inode) the walk
//   came from; if the tree was rearranged under it the walk stops with an exception
//   instead of wandering off.
#pragma once

#include <functional>
#include <string>
#include <sys/stat.h>

namespace sandboxd::runtime {

struct tree_visitor {
  // Called for every entry that is not a directory (or is a directory the walk may not
  // enter: a mount point or one swapped for a symlink meanwhile), with its parent's fd
  // and its lstat. May unlink it.
  std::function<void(int parent_fd, const std::string& name, const struct stat& st)> on_leaf;
  // Called after everything below the directory `name` was visited. May rmdir it.
  std::function<void(int parent_fd, const std::string& name)> on_dir_done;
  // A directory the walk cannot enter (a mount point: EXDEV): true to skip it (it is then
  // passed to on_leaf), false to stop with std::system_error.
  bool skip_mount_points = false;
};

// Walks everything below the directory `name` directly inside `parent_fd` (depth first,
// each directory's entries before the directory itself is done). `name` itself gets
// on_dir_done last. A missing `name` is no error: nothing is visited. Throws
// std::system_error on I/O errors and when the tree changes shape under the walk.
void walk_tree(int parent_fd, const std::string& name, const tree_visitor& visitor);

// Deletes the tree `name` directly inside `parent_fd` by handle (see above): symlinks are
// deleted, never followed; a mount point inside stops the deletion with
// std::system_error(EXDEV) and is left with whatever has not been deleted yet.
void remove_tree_at(int parent_fd, const std::string& name);

// Bytes of the regular files and symlinks below the directory `name` inside `parent_fd`
// (their st_size), walked by handle; mount points are skipped. 0 when it is missing.
std::uint64_t tree_bytes_at(int parent_fd, const std::string& name);

} // namespace sandboxd::runtime
