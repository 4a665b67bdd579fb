// rooted_dirs — the changes to a sandbox's tree other than writing a file: make a
// directory, remove a file or a tree, rename. Confined like rooted_fs.hpp: each path's
// parent is opened inside the root (RESOLVE_IN_ROOT, no magic links, no mount crossed)
// and the last name is worked on beneath that handle, never followed: a symlink is
// removed or renamed as itself. A recursive removal walks by handle (tree_walk.hpp), so a
// symlink inside the tree is removed, never its target, and a directory swapped for a
// symlink while it runs stops the walk (conflict) instead of leaving the tree.
//
// The root itself and a last name of "." or ".." are refused (invalid_argument).
#pragma once

#include "runtime/rooted_fs.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace sandboxd::runtime {

// `path` split into the parent (relative to the root, "." for the root) and the last
// name, after the checks above.
outcome<std::pair<std::string, std::string>> split_in_root(std::string_view path);

outcome<void> make_dir_in_root(const std::string& root, std::string_view path, bool parents,
                               std::uint32_t mode, std::optional<file_owner> owner);
outcome<void> remove_in_root(const std::string& root, std::string_view path, bool recursive);
outcome<void> rename_in_root(const std::string& root, std::string_view from, std::string_view to);

} // namespace sandboxd::runtime
