// memfd_file — a small file in memory (memfd) that another process can open by path
// (/proc/<our pid>/fd/<n>) while this object lives. Used to hand the runtimes their
// process.json and to receive their pid files without touching the disk.
#pragma once

#include <string>
#include <string_view>

namespace sandboxd::runtime {

class memfd_file {
public:
  // Throws std::system_error when the kernel refuses.
  explicit memfd_file(std::string_view content = {});
  ~memfd_file();
  memfd_file(const memfd_file&) = delete;
  memfd_file& operator=(const memfd_file&) = delete;

  const std::string& path() const { return path_; }
  // The current content (whatever another process wrote through the path).
  std::string read() const;

private:
  int fd_;
  std::string path_;
};

} // namespace sandboxd::runtime
