// overlay_mount — the overlay that is a sandbox's root filesystem: the template
// (lowerdir, never written) below, the sandbox's writable layer (upperdir) above, the
// merged view at `target`. Nobody may change upperdir while the overlay is mounted
// (overlayfs leaves that undefined); write through the merged view instead.
//
// The overlay is mounted nosuid and nodev: no file in it is setuid or a device for the
// host, whoever made it. It is mounted `volatile`: overlayfs never syncs the upper layer itself (an
// unmount then costs no sync of the whole host filesystem); unmount_overlay with
// `flush` syncs it explicitly where durability is promised (a filesystem pause).
#pragma once

#include <string>

namespace sandboxd::runtime {

struct overlay_dirs {
  std::string lower, upper, work, target;
};

// Throws std::system_error when the kernel refuses.
void mount_overlay(const overlay_dirs& dirs);
// Unmounts `target` if it is mounted (lazily if it stays busy); with `flush`, syncs
// the filesystem first (a layer that is kept; not needed for one being deleted).
void unmount_overlay(const overlay_dirs& dirs, bool flush = true);
bool is_mount_point(const std::string& path);
// Unmounts whatever is mounted on `path` (lazily if it stays busy for a second); nothing
// mounted there is fine.
void unmount_path(const std::string& path);

// Mounts the overlay for the lifetime of the object unless it was mounted already.
class scoped_overlay {
public:
  explicit scoped_overlay(const overlay_dirs& dirs);
  ~scoped_overlay();
  scoped_overlay(const scoped_overlay&) = delete;
  scoped_overlay& operator=(const scoped_overlay&) = delete;

private:
  overlay_dirs dirs_;
  bool mounted_here_ = false;
};

} // namespace sandboxd::runtime
