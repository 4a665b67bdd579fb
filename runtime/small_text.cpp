#include "runtime/small_text.hpp"

#include <fstream>
#include <iterator>

namespace sandboxd::runtime {

std::string read_small_text(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

} // namespace sandboxd::runtime
