// temp_dir — a private temporary directory for one test, removed with everything in
// it when the object goes away. Every test directory is /tmp/sandboxd-test-*, so the
// test command can check that none is left behind.
#pragma once

#include <string>

namespace sandboxd::test {

class temp_dir {
public:
  // Creates /tmp/sandboxd-test-<tag>-XXXXXX (mode 0700). Throws on failure.
  explicit temp_dir(const std::string& tag = "tmp");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  // Leaves the directory in place (for a process that hands it to a guardian).
  std::string release();

private:
  std::string path_;
};

// Removes a directory tree; missing is fine. Throws on other failures.
void remove_tree(const std::string& path);

} // namespace sandboxd::test
