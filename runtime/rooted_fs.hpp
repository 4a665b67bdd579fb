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

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::runtime {

outcome<std::string> read_file_in_root(const std::string& root, std::string_view path,
                                       std::uint64_t max_bytes);
outcome<void> write_file_in_root(const std::string& root, std::string_view path,
                                 std::string_view content, std::uint32_t mode,
                                 std::uint64_t max_bytes);
outcome<std::vector<dir_entry>> list_dir_in_root(const std::string& root, std::string_view path);
outcome<file_info> stat_in_root(const std::string& root, std::string_view path);

} // namespace sandboxd::runtime
