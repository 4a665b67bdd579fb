// rooted_fs — file operations confined to a directory that code in a sandbox controls.
//
// Every path is resolved by the kernel inside `root` (openat2 with RESOLVE_IN_ROOT,
// RESOLVE_NO_MAGICLINKS and RESOLVE_NO_XDEV): `..` stops at the root, absolute
// symlinks and symlink chains are taken relative to the root, and no mount point is
// crossed, so no name can make the caller read or write a host file. This holds even
// while the sandbox changes the tree concurrently, because every step works on file
// descriptors. Paths with NUL are refused.
//
// Writes are atomic (a temporary file in the target's directory, fsynced, renamed over
// the name; removed on any failure) and create missing parent directories. A written
// file keeps only the permission bits of the mode asked for (mode & 0777).
#pragma once

#include "runtime/driver.hpp"
#include "runtime/unique_fd.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace sandboxd::runtime {

outcome<std::string> read_file_in_root(const std::string& root, std::string_view path,
                                       std::uint64_t max_bytes);
// The owner given to files and directories a write makes, when not the caller's own.
struct file_owner {
  uid_t uid;
  gid_t gid;
};

// With `owner`, the file written and every parent directory made get that owner (the
// sandbox's root, so that code inside may change them).
outcome<void> write_file_in_root(const std::string& root, std::string_view path,
                                 std::string_view content, std::uint32_t mode,
                                 std::uint64_t max_bytes,
                                 std::optional<file_owner> owner = std::nullopt);
// Reads at most `max_entries` entries of the directory (and one more, to know whether
// there are more): a directory of any size is answered in time and memory bounded by
// the cap.
outcome<dir_listing> list_dir_in_root(const std::string& root, std::string_view path,
                                      std::uint32_t max_entries);
outcome<file_info> stat_in_root(const std::string& root, std::string_view path);

// The checks write_file_in_root makes before touching anything (NUL, empty path, a path
// naming a directory, content over `max_bytes`), for a write made some other way; the
// path as an absolute path inside the root.
outcome<std::string> checked_write_path(std::string_view path, std::size_t content_bytes,
                                        std::uint64_t max_bytes);
// The driver's error for errno `e` on `path` (not_found, not_a_directory, ...).
error error_of_errno(int e, std::string_view path);

// The pieces the other confined calls (rooted_dirs.hpp) are made of:
// `path` relative to the root ("." for the root itself); invalid_argument for NUL or "".
outcome<std::string> path_in_root(std::string_view path);
outcome<unique_fd> open_root_dir(const std::string& root);
// openat2 of `rel` below the root's handle, resolved as described above; -1 and errno.
int open_in_root(int rootfd, const std::string& rel, std::uint64_t flags);
// The directory `rel_dir`, made (mode 0755, owned by `owner`) where missing, each
// component resolved inside the root again after it was made.
outcome<unique_fd> open_dir_creating_in_root(int rootfd, const std::string& rel_dir,
                                             std::string_view shown,
                                             std::optional<file_owner> owner);

} // namespace sandboxd::runtime
