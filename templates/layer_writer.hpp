// layer_writer — writes the entries of an untrusted archive into an empty layer directory,
// by handle, so that no byte lands outside it and no host file is read.
//
// Every entry's path is checked once and then resolved component by component beneath the
// layer's root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV): no path string ever reaches the host. The rules (docs/templates.md
// "Archive rules"); a refused entry stops the import with an error naming it:
// - paths: a leading "/" or "./" is dropped (archives name the root either way); a ".."
//   component, a NUL, an empty component past the first, a component over 255 bytes, a path
//   over `max_path` bytes or nested deeper than `max_depth` is refused;
// - an entry under a symlink or a file of the same archive is refused (a symlink is never
//   written through: `lib -> /etc` then `lib/passwd` cannot reach /etc);
// - a later entry of the same path replaces the earlier one (tar's rule), a directory with
//   everything in it included;
// - symlinks are stored as they are (their targets are never followed, here or by the host);
// - a hard link must name a regular file this archive already put in the layer;
// - device nodes are dropped (the runtime provides /dev); FIFOs are kept;
// - setuid and setgid bits are cleared (a sandbox's root is mounted nosuid: they would grant
//   nothing), owners above 65535 become 65534 (nobody), and only `user.*` extended
//   attributes are kept (an archive must never set overlayfs's trusted.* or file
//   capabilities); each of these is counted in the report;
// - limits: entries, total bytes, one file's bytes (too_large, naming the entry);
// - with `whiteouts::overlay` (the layers of an OCI or Docker image), `.wh.<name>` becomes
//   an overlayfs whiteout (a 0/0 character device) and `.wh..wh..opq` makes its directory
//   opaque (trusted.overlay.opaque=y), so the layer means in a stack what it meant in the
//   image; with `whiteouts::literal` (a root filesystem tarball) they are ordinary names.
// Directories the archive does not list, and the layer's root unless the archive lists ".",
// get mode 0755, owner root and mtime 0, so the same archive always gives the same digest.
// Directory metadata is applied by finish(), deepest first.
#pragma once

#include "base/result.hpp"
#include "runtime/layer_digest.hpp"
#include "runtime/unique_fd.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sandboxd::templates {

struct import_limits {
  std::uint64_t max_bytes = 16ull << 30;     // all files together
  std::uint64_t max_file_bytes = 8ull << 30; // one file
  std::uint64_t max_entries = 2'000'000;
  std::size_t max_path = 4096;
  unsigned max_depth = 256;
};

enum class whiteouts { literal, overlay };

enum class entry_type {
  file,
  directory,
  symlink,
  hardlink,
  char_device,
  block_device,
  fifo,
  other
};

struct entry_header {
  std::string path; // as the archive names it
  entry_type type = entry_type::file;
  std::uint32_t mode = 0644; // permission bits and setuid/setgid/sticky
  std::uint32_t uid = 0, gid = 0;
  std::int64_t mtime = 0; // seconds
  std::int64_t mtime_nsec = 0;
  std::uint64_t size = 0; // a file's bytes
  std::string link;       // a symlink's target, a hard link's path in the archive
  std::vector<std::pair<std::string, std::string>> xattrs;
};

struct write_report {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  std::uint64_t devices_dropped = 0;
  std::uint64_t setid_cleared = 0;
  std::uint64_t owners_mapped = 0;
  std::uint64_t xattrs_dropped = 0;
  std::uint64_t replaced = 0; // entries a later one of the same path replaced
  std::uint64_t whiteouts = 0, opaque_dirs = 0;
};

// An entry path checked by the rules above, as its components (empty: the root).
result<std::vector<std::string>> split_entry_path(const std::string& path,
                                                  const import_limits& limits);
// The mode bits and an owner id as the layer stores them (setuid/setgid cleared, ids above
// 65535 as 65534).
std::uint32_t stored_mode(std::uint32_t mode);
std::uint32_t stored_owner(std::uint32_t id);

// Reads up to `n` bytes of the entry's data into `buf`; 0 at its end, -1 on an error (the
// writer then stops with errc::invalid_argument quoting `source_error`).
using data_reader = std::function<long(char* buf, std::size_t n)>;

class layer_writer {
public:
  // `root`: the empty layer directory (an O_RDONLY handle; not owned). `hashes` (may be null)
  // gets the SHA-256 of every regular file as it is written, by inode (layer_digest.hpp).
  layer_writer(int root, import_limits limits, whiteouts mode,
               runtime::content_hashes* hashes = nullptr);
  ~layer_writer();
  layer_writer(const layer_writer&) = delete;
  layer_writer& operator=(const layer_writer&) = delete;

  // Writes one entry (pulling a file's data through `read`). An error names the entry.
  result<void> add(const entry_header& h, const data_reader& read);
  // An overlayfs whiteout at `path` (a 0/0 character device): the layer hides what the layers
  // below it have there.
  result<void> whiteout(const std::string& path);
  // Marks the directory `path`, added before, opaque (trusted.overlay.opaque=y, applied by
  // finish()): the layer hides what the layers below it have in it. For trees that carry
  // overlayfs's own marks (a build step's writable layer), whatever the whiteout mode.
  result<void> make_opaque(const std::string& path);
  // Applies the directories' metadata. Call once, after the last add().
  result<void> finish();
  const write_report& report() const { return report_; }
  // Set by a data_reader that failed, for the error message.
  std::string source_error;

private:
  struct dir_meta {
    std::uint32_t mode = 0755, uid = 0, gid = 0;
    std::int64_t mtime = 0, mtime_nsec = 0;
    std::vector<std::pair<std::string, std::string>> xattrs;
    bool opaque = false;
  };
  // The directory `parent` (components, "" the root) opened beneath the root, made (with the
  // implicit directories' metadata) where missing.
  result<int> open_parent(const std::vector<std::string>& parts, const std::string& shown);
  // Removes whatever is at `name` in `dir` (a tree too); counts it as replaced.
  result<void> clear(int dir, const std::string& name, const std::string& shown);

  int root_;
  import_limits limits_;
  whiteouts mode_;
  write_report report_;
  std::map<std::string, dir_meta> dirs_; // by path ("" the root): every directory written
  std::string cached_parent_;            // the parent the last entry was written into
  runtime::unique_fd cached_fd_;
  std::vector<char> buf_;
  runtime::content_hashes* hashes_;
};

} // namespace sandboxd::templates
