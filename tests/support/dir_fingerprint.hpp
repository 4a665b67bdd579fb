// dir_fingerprint — everything a reader could change in a directory tree, as one string:
// each entry's relative path, type, mode, size, modification time (nanoseconds) and a hash
// of its content, sorted by path. Two equal fingerprints: nothing was created, removed,
// written, truncated, renamed or touched between them. Header-only.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace sandboxd::test {

inline std::string dir_fingerprint(const std::string& root) {
  std::vector<std::string> lines;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    struct stat st {};
    ::lstat(entry.path().c_str(), &st);
    std::string line = std::filesystem::relative(entry.path(), root).string() + " mode " +
                       std::to_string(st.st_mode) + " size " + std::to_string(st.st_size) +
                       " mtime " + std::to_string(st.st_mtim.tv_sec) + "." +
                       std::to_string(st.st_mtim.tv_nsec);
    if (entry.is_regular_file()) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string content((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
      line += " content " + std::to_string(std::hash<std::string>{}(content));
    }
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines)
    out += l + "\n";
  return out;
}

} // namespace sandboxd::test
