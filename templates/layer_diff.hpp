// layer_diff — a whole root filesystem stored as the layer above another: only what differs.
//
// extract_tar_above reads a tar of a complete tree and writes into `w` the layer that, stacked
// on the layer open as `lower`, shows exactly that tree: entries equal to lower's (type,
// mode, owner, mtime in seconds, user.* attributes, and a file's bytes or a link's target)
// are left out, directories are always written (an upper directory's metadata is what the
// stack shows), and every entry of `lower` the tree does not have becomes a whiteout. So the
// stock `python` and `node` share the `debian` layer below them: stored once.
#pragma once

#include "templates/archive_reader.hpp"

namespace sandboxd::templates {

struct diff_report {
  std::uint64_t kept_from_lower = 0; // entries left out: the lower layer has them
  std::uint64_t written = 0;
  std::uint64_t whited_out = 0;
};

result<diff_report> extract_tar_above(chunk_source source, int lower, layer_writer& w);

} // namespace sandboxd::templates
