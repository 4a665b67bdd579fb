// template_store — read-only root filesystems that sandboxes are overlaid on.
//
// A template lives in <data_dir>/templates/<name>-<hash>, where <hash> is the first
// 16 hex digits of a SHA-256 over its whole tree (paths, types, modes, symlink targets
// and file contents); <data_dir>/templates/<name> is a symlink to the current one.
// A template directory is never changed once renamed into place (it is built in a
// temporary directory first), so every sandbox overlaid on it sees the same files.
//
// A template name is checked by names.hpp before it touches the disk, and the link is
// resolved by handle beneath the templates directory: readlinkat() of the link, whose
// target must be exactly `<name>-<16 hex digits>` (no '/', no '..'), then openat2()
// with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS of that target,
// which must be a real directory directly inside. Anything else found there (a link
// to elsewhere, to a nested directory, to another symlink, a plain directory where
// the link belongs) is refused as permission_denied, so no name reaches a host
// directory outside the templates.
//
// `base` is built on first use from the host's static busybox (/bin/busybox, Debian's
// busybox-static): the shell and core utilities, /etc/passwd, /workspace, and a
// placeholder file in /tmp (an empty /tmp would become a tmpfs inside gVisor and
// writes to it would not reach the writable layer). `debian` is built only by an
// explicit build_debian() (debootstrap; slow, needs the network).
#pragma once

#include "runtime/errc.hpp"
#include "runtime/unique_fd.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace sandboxd::runtime {

class template_store {
public:
  explicit template_store(std::string data_dir);

  // The root filesystem directory of template `name`; builds `base` if it is missing.
  // invalid_argument for a name names.hpp refuses, not_found for a template that was
  // never built, permission_denied for a link that does not point at a template
  // directory directly inside the templates directory.
  outcome<std::string> rootfs(const std::string& name);

  // Opens (O_PATH) a template root filesystem directory as rootfs() returned it,
  // checking by handle again that it is a `<name>-<hash16>` directory directly inside
  // the templates directory. permission_denied otherwise.
  outcome<unique_fd> open_rootfs(const std::string& dir) const;

  // Builds `debian` with `debootstrap --variant=minbase <suite>` and returns its root.
  outcome<std::string> build_debian(const std::string& suite = "bookworm",
                                    const std::string& mirror = "http://deb.debian.org/debian");

private:
  // The link `name` resolved as described above.
  outcome<std::string> resolve(const std::string& name) const;
  outcome<std::string> build_base();
  // Deletes a staging directory (directly inside the templates directory) by handle.
  void discard(const std::string& staging) const noexcept;
  // Hashes the tree at `staging`, moves it into place and points the name at it.
  std::string publish(const std::string& name, const std::string& staging);

  std::string dir_;
  std::mutex mutex_;
  std::map<std::string, std::string> known_; // name -> root filesystem, once looked up
};

// Hex SHA-256 over a directory tree, not following symlinks.
std::string hash_tree(const std::string& dir);

// The tree of `base` written into the empty directory `dir`: the host's static busybox
// (/bin/busybox) with its applets as symlinks, /etc/passwd and friends, /workspace, and a
// placeholder file in /tmp. Throws when it cannot. base_tree_unavailable says why it
// cannot be made on this machine, or nullopt.
void write_base_tree(const std::string& dir);
std::optional<std::string> base_tree_unavailable();

} // namespace sandboxd::runtime
