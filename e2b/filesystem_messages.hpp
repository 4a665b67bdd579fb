// filesystem_messages — the messages of envd's filesystem service (filesystem/filesystem.proto
// of the E2B SDKs, package `filesystem`) in their JSON form, and the JSON of envd's HTTP file
// upload answer.
//
//   Stat{path} -> {entry}          MakeDir{path} -> {entry}        Move{source, destination}
//   ListDir{path, depth} -> {entries}                               Remove{path} -> {}
//   WatchDir, CreateWatcher, GetWatcherEvents, RemoveWatcher: refused (docs/e2b.md)
//
// An EntryInfo: name, type (FILE_TYPE_FILE, FILE_TYPE_DIRECTORY, FILE_TYPE_SYMLINK), path,
// size (int64, so a string), mode (Go's fs.FileMode: the permission bits, with 1<<31 for a
// directory and 1<<27 for a symlink), permissions (its text, "drwxr-xr-x"), owner, group,
// modifiedTime (RFC 3339), isSymlink.
#pragma once

#include "base/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::e2b {

struct path_request {
  std::string path;
};

struct move_request {
  std::string source;
  std::string destination;
};

struct list_dir_request {
  std::string path;
  std::uint32_t depth = 1; // 0 (unset) reads as 1
};

// Stat, MakeDir, Remove: a path alone.
result<path_request> parse_path_request(std::string_view body);
result<move_request> parse_move_request(std::string_view body);
result<list_dir_request> parse_list_dir_request(std::string_view body);

enum class entry_type { file, directory, symlink, other };

struct entry_view {
  std::string name;
  entry_type type = entry_type::file;
  std::string path;
  std::uint64_t size = 0;
  std::uint32_t permissions = 0; // the permission bits (0755)
  std::int64_t modified_ns = 0;
  std::string owner = "root";
  std::string group = "root";
};

std::string entry_response(const entry_view& e); // {"entry": EntryInfo}
std::string list_dir_response(const std::vector<entry_view>& entries);

// The upload answer of POST /files: [{"name", "type": "file", "path"}] per file written.
std::string upload_response(const std::vector<entry_view>& written);

// Go's fs.FileMode of an entry, and its text ("-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx").
std::uint32_t go_file_mode(const entry_view& e);
std::string go_mode_text(const entry_view& e);

// The last element of a path ("/a/b" -> "b", "/" -> "/").
std::string base_name(std::string_view path);

} // namespace sandboxd::e2b
