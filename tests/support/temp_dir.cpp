#include "tests/support/temp_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace sandboxd::test {

temp_dir::temp_dir(const std::string& tag) {
  std::string pattern = "/tmp/sandboxd-test-" + tag + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  path_ = buf.data();
}

temp_dir::~temp_dir() {
  if (path_.empty())
    return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string temp_dir::release() {
  std::string p;
  p.swap(path_);
  return p;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec)
    throw std::system_error(ec, "remove " + path);
}

} // namespace sandboxd::test
