// id_map — the host identity of a sandbox. Every sandbox runs in a user namespace whose
// ids 0-65535 map to its own range of host ids, [base, base + 65536), taken from the
// node's ranges (id_ranges) when it is created and kept in its record: root in one
// sandbox is an unprivileged host uid that owns nothing on the host but that sandbox's
// layer, and is a different uid from root in every other sandbox.
//
// The template below every sandbox stays owned by host root on disk and is shared; each
// sandbox sees it through an idmapped mount (mount_setattr MOUNT_ATTR_IDMAP) with its own
// range, so a file owned by host uid u appears owned by base + u (root's files by the
// sandbox's root) without a copy or a chown per sandbox.
#pragma once

#include "runtime/unique_fd.hpp"

#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::runtime {

struct id_range {
  static constexpr std::uint32_t size = 65536;
  std::uint32_t base = 0; // host uid and gid of the sandbox's root
};

// The node's ranges: `count` ranges of 65536 ids from `first` (a multiple of 65536).
class id_ranges {
public:
  id_ranges(std::uint32_t first, std::uint32_t count);
  // The lowest free range, now taken; nullopt when all are in use.
  std::optional<id_range> take();
  // Marks a range found in a record as taken; false when it is not one of the node's.
  bool mark_taken(id_range r);
  void release(id_range r);

private:
  std::uint32_t first_, count_;
  std::mutex mu_;
  std::set<std::uint32_t> taken_; // slot numbers
};

// A user namespace whose uid and gid maps are "0 <base> 65536", held by a descriptor.
// Throws std::system_error when the kernel refuses.
unique_fd make_userns(id_range r);

// Mounts the directory open as `source` (any handle, O_PATH is fine) on `target` as a
// read-only, nosuid, nodev bind that shows its files through range `r` (host uid u as
// base + u). Throws std::system_error when the kernel refuses.
void mount_idmapped(int source, const std::string& target, id_range r);
// The same for several (source, target) pairs, with one user namespace for all of them.
void mount_idmapped(const std::vector<std::pair<int, std::string>>& mounts, id_range r);

} // namespace sandboxd::runtime
