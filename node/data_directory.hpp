// data_directory — the node's data directory, checked and held for the life of the node.
//
// Opening it:
// - makes the path absolute; creates the directory (mode 0700; missing parents 0755)
//   when it is missing;
// - refuses (start_error) a path that is not a directory, or a directory owned by
//   another user than the one sandboxd runs as — naming both users and what to do;
// - sets its mode to 0700, or to 0710 with group `traverse_group` when one is given:
//   the embedded PostgreSQL runs as its own user, which must traverse the directory to
//   reach DATA_DIR/postgres and may list or read nothing else in it (a name it knows,
//   such as DATA_DIR/log, is a directory of mode 0700: private_subdirectory());
// - takes DATA_DIR/sandboxd.lock (flock, the holder's pid written in it), so a second
//   node on the same directory, in this process or another, is refused with the
//   holder's pid. The lock goes with the process, also when it is killed.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace sandboxd::node {

class data_directory {
public:
  explicit data_directory(const std::string& path, std::optional<gid_t> traverse_group = {});
  ~data_directory();
  data_directory(const data_directory&) = delete;
  data_directory& operator=(const data_directory&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // DATA_DIR/name, made or set to mode 0700: what only sandboxd's user may open (the
  // event log, which holds every tenant's arguments and environment).
  std::string private_subdirectory(const std::string& name) const;

private:
  std::string path_;
  int lock_fd_ = -1;
};

// "root (uid 0)", "uid 1234" when the user has no name.
std::string describe_user(uid_t uid);

} // namespace sandboxd::node
