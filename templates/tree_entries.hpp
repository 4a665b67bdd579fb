// tree_entries — the entries of a tree on the host, read by handle, as a layer_writer takes
// them (entry_header and a data reader): for the layers made of trees sandboxd did not write
// itself, a build step's writable layer and the files of a build context (step_layers.hpp).
//
// The tree is untrusted (a build step's processes wrote it) and must not change while it is
// read (the caller's job: the sandbox is paused, the context is the build's own). So:
// - every step down opens the directory by handle beneath its parent (RESOLVE_BENEATH |
//   RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, O_NOFOLLOW); a symlink is reported, never followed;
//   a mount point is not entered;
// - a regular file is opened O_NOFOLLOW by its name in its directory's handle, only when its
//   data is read; FIFOs, sockets and devices are never opened;
// - a file with several links is reported as a hard link to the first path the walk gave it;
// - entries come depth first, a directory before its entries, each directory's entries sorted
//   bytewise by name (so the same tree always gives the same order), at most `max_depth`
//   directories deep.
#pragma once

#include "templates/layer_writer.hpp"

#include <functional>
#include <string>
#include <vector>

namespace sandboxd::templates {

struct tree_entry {
  entry_header header; // path relative to the walk's top, "a/b"; owners as on the host
  std::uint32_t major = 0, minor = 0; // a device's (a 0/0 character device: a whiteout)
  bool opaque = false;                // a directory marked trusted.overlay.opaque=y
  std::string overlay_xattr;          // the first other trusted.overlay.* attribute, if any
  std::uint64_t inode = 0;
  std::int64_t ctime_ns = 0; // its inode's last change
};

using entry_visit = std::function<result<void>(const tree_entry&, const data_reader&)>;

// Visits every entry below the directory `top` (an O_RDONLY handle; the top itself is not
// visited), stopping at the first error `visit` returns. A fault reading the tree is
// errc::internal naming the path.
result<void> walk_entries(int top, const entry_visit& visit, unsigned max_depth = 256);

// The entry of one non-directory `name` in the directory `dir` as walk_entries reports it
// (path `path`), for a COPY of a single file.
result<tree_entry> entry_at(int dir, const std::string& name, const std::string& path);
// Calls `visit` for that entry with a reader of its data.
result<void> visit_entry(int dir, const std::string& name, const tree_entry& e,
                         const entry_visit& visit);

} // namespace sandboxd::templates
