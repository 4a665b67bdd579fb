// file_view — files as sandboxctl shows them.
//
// JSON of a file (`stat`, `write`, `read`, `cp-in`, `cp-out`): path, type (regular,
// directory, symlink, other), size, mode (octal text, "0644"), mtime (RFC 3339); with a
// digest, sha256 (hex). `ls --json`: {"path", "entries": [{name, path (the full path),
// type, size, mode, mtime}], "truncated"}.
#pragma once

#include "api/records.hpp"
#include "cli/json_util.hpp"

#include <string>

namespace sandboxd::cli {

std::string file_type_name(api::file_type t);
json file_json(const api::file_info& f);
json file_json(const api::file_digest& f);
json listing_json(const std::string& dir, const api::dir_listing& l);
// MODE SIZE MTIME NAME rows ("drwxr-xr-x", directories with a trailing '/').
std::string listing_table(const api::dir_listing& l);
std::string file_text(const api::file_info& f);

// `dir` + "/" + `name`, without doubling the slash.
std::string join_path(const std::string& dir, const std::string& name);

} // namespace sandboxd::cli
