// data_entry — the path the oci driver works through for its data directory.
//
// A sandbox's runtime processes in its user namespace (crun's container set-up, runsc's
// gofer) run as the sandbox's unprivileged host root and must reach its root filesystem
// and the exec guard by path, so every directory on the way must be searchable by
// others. The data directory itself is 0711 (oci_driver.hpp); when a directory above it
// is not searchable (a node's data directory is 0700), the data directory is bound
// (recursively) at <entry_root>/<hash of its path> — by default /run/sandboxd/<hash>, made
// 0711 — and the driver works through that path. The bind shows nothing the data
// directory's own modes do not already allow. Without such a directory above, the data
// directory's own path is used and nothing is mounted.
#pragma once

#include <string>

namespace sandboxd::runtime {

// Whether every directory above `path` is searchable by others.
bool ancestors_searchable(const std::string& path);

// Where the entry of the data directory `data_dir` (canonical) is under `entry_root`, when
// it needs one.
std::string entry_path(const std::string& data_dir, const std::string& entry_root);

class data_entry {
public:
  // Makes `data_dir` if missing and binds it as described above if needed. Throws
  // std::system_error / std::invalid_argument when it cannot.
  data_entry(const std::string& data_dir, const std::string& entry_root);
  // Unbinds (lazily) when it bound and nothing is mounted below it any more (a
  // memory-paused sandbox keeps its overlay mounted, and so the entry, until it is resumed
  // or removed by a later driver, which takes the entry over).
  ~data_entry();
  data_entry(const data_entry&) = delete;
  data_entry& operator=(const data_entry&) = delete;

  const std::string& path() const { return path_; } // to work through
  const std::string& data_dir() const { return data_dir_; }
  bool bound() const { return path_ != data_dir_; }

private:
  std::string data_dir_, path_;
};

} // namespace sandboxd::runtime
