// build_tree — where a test binary finds the source tree and the programs of its build, at
// run time: SANDBOXD_SOURCE_DIR and SANDBOXD_BINARY_DIR (ctest sets both), else the build
// directory is the nearest one above the running binary that holds CMakeCache.txt and the
// source tree is the one that cache names. No path is compiled in, so an object compiled in
// one clone is the same object in every other one (the compiler cache hits across clones).
// Header-only and standard C++ only: the unit tests that link nothing of tests/support use it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace sandboxd::test {

// The build directory this binary belongs to.
inline std::string binary_dir() {
  if (const char* d = std::getenv("SANDBOXD_BINARY_DIR"); d && *d)
    return d;
  std::error_code ec;
  auto at = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (; !ec && !at.empty() && at != at.root_path(); at = at.parent_path())
    if (std::filesystem::exists(at / "CMakeCache.txt"))
      return at.string();
  throw std::runtime_error("no CMakeCache.txt above this test binary; set SANDBOXD_BINARY_DIR");
}

// The source tree of that build.
inline std::string source_tree() {
  if (const char* d = std::getenv("SANDBOXD_SOURCE_DIR"); d && *d)
    return d;
  const std::string cache = binary_dir() + "/CMakeCache.txt";
  std::ifstream in(cache);
  const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0)
      return line.substr(key.size());
  throw std::runtime_error(cache + " names no source directory; set SANDBOXD_SOURCE_DIR");
}

// A program of this build by its path in the build directory: "apps/sandboxd".
inline std::string built_program(const std::string& path_in_build) {
  return binary_dir() + "/" + path_in_build;
}

// A program built into the directory of the running binary: "node_worker".
inline std::string beside_this_binary(const std::string& name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error("cannot read /proc/self/exe: " + ec.message());
  return (self.parent_path() / name).string();
}

} // namespace sandboxd::test
