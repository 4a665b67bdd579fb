#include "runtime/small_text.hpp"

#include "runtime/unique_fd.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace sandboxd::runtime {

std::string read_small_file(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return {};
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0)
      return s;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return {};
    s.append(buf, static_cast<std::size_t>(n));
  }
}

std::string read_small_text(const std::string& path) {
  std::string s = read_small_file(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

} // namespace sandboxd::runtime
