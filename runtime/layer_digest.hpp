// layer_digest — the name of a template layer: the SHA-256 of its tree.
//
// A layer is named by what a sandbox would see of it, so the same tree gets the same name
// wherever and however it was made (built, imported, unpacked from a cache) and is stored
// once. The digest is SHA-256 over a manifest (docs/templates.md "Layer digest"): the line
// "sandboxd layer v1\n", then one line per entry in depth-first order, a directory's
// entries sorted bytewise by name, the layer's root first as ".":
//
//   <path> NUL <type> SP <mode> SP <uid> SP <gid> SP <mtime> SP <what> NUL <xattrs> LF
//
// type: d f l c b p s (directory, regular file, symlink, character and block device, FIFO,
// socket); mode: the permission bits (07777) in octal; mtime: whole seconds since the
// epoch (what a tar header holds); what: a file's size and the SHA-256 of its bytes, a
// symlink's target, a device's major,minor, "-" otherwise; xattrs: every extended
// attribute as name=hex(value), sorted, separated by SP (overlay whiteouts, opaque
// directories and file capabilities are part of what a layer means). Hard links are not
// distinguished from copies.
//
// The walk is by handle (each step down with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, each
// step up checked to be the directory it came from), never follows a symlink, never enters
// a mount point and refuses a tree nested deeper than `max_depth`; a tree that changes under
// it makes it throw.
//
// The SHA-256 of a regular file's bytes may be given (`known`, by inode) by whoever wrote the
// tree and nothing else could write it (a layer's staging tree, filled by layer_writer, which
// hashes each file as it writes it): the walk then uses it for a file of that inode and size
// instead of reading the file back.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace sandboxd::runtime {

struct layer_summary {
  std::string sha256;           // 64 lowercase hex digits
  std::uint64_t entries = 0;    // the manifest's lines, the root included
  std::uint64_t file_bytes = 0; // the sizes of its regular files
  std::uint64_t link_bytes = 0; // the sizes (target lengths) of its symlinks
};

// Regular files' contents as their writer hashed them: inode -> (size, SHA-256 in hex).
struct known_content {
  std::uint64_t size = 0;
  std::string sha256;
};
using content_hashes = std::unordered_map<std::uint64_t, known_content>;

// The digest of the tree whose root directory is open as `dir`. Throws std::system_error
// on I/O errors and std::runtime_error for a tree it refuses (too deep, changed meanwhile).
layer_summary digest_layer(int dir, unsigned max_depth = 1024,
                           const content_hashes* known = nullptr);

} // namespace sandboxd::runtime
