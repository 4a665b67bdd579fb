// template_store — read-only root filesystems that sandboxes are overlaid on.
//
// A template lives in <data_dir>/templates/<name>-<hash>, where <hash> is the first
// 16 hex digits of a SHA-256 over its whole tree (paths, types, modes, symlink targets
// and file contents); <data_dir>/templates/<name> is a symlink to the current one.
// A template directory is never changed once renamed into place (it is built in a
// temporary directory first), so every sandbox overlaid on it sees the same files.
//
// `base` is built on first use from the host's static busybox (/bin/busybox, Debian's
// busybox-static): the shell and core utilities, /etc/passwd, /workspace, and a
// placeholder file in /tmp (an empty /tmp would become a tmpfs inside gVisor and
// writes to it would not reach the writable layer). `debian` is built only by an
// explicit build_debian() (debootstrap; slow, needs the network).
#pragma once

#include "runtime/errc.hpp"

#include <map>
#include <mutex>
#include <string>

namespace sandboxd::runtime {

class template_store {
public:
  explicit template_store(std::string data_dir);

  // The root filesystem directory of template `name`; builds `base` if it is missing.
  // not_found for a template that was never built.
  outcome<std::string> rootfs(const std::string& name);

  // Builds `debian` with `debootstrap --variant=minbase <suite>` and returns its root.
  outcome<std::string> build_debian(const std::string& suite = "bookworm",
                                    const std::string& mirror = "http://deb.debian.org/debian");

private:
  outcome<std::string> build_base();
  // Hashes the tree at `staging`, moves it into place and points the name at it.
  std::string publish(const std::string& name, const std::string& staging);

  std::string dir_;
  std::mutex mutex_;
  std::map<std::string, std::string> known_; // name -> root filesystem, once looked up
};

// Hex SHA-256 over a directory tree, not following symlinks.
std::string hash_tree(const std::string& dir);

} // namespace sandboxd::runtime
