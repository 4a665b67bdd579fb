// beneath — opening a file strictly below a directory the driver holds by handle: the
// kernel resolves the relative path with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, so no "..", absolute path, symlink (planted or
// swapped in) or mount point can take it anywhere else. Every file the driver writes in
// its data directory (records, bundles) is opened this way.
#pragma once

#include "runtime/unique_fd.hpp"

#include <string>
#include <sys/types.h>

namespace sandboxd::runtime {

// `rel` below `dirfd` with open(2) `flags` (O_CLOEXEC added) and `mode` for O_CREAT. An
// invalid unique_fd with errno set when the kernel refuses (EXDEV, ELOOP for an escape).
unique_fd open_beneath(int dirfd, const std::string& rel, int flags, mode_t mode = 0);

} // namespace sandboxd::runtime
