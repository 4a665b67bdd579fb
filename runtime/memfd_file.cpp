#include "runtime/memfd_file.hpp"

#include <cerrno>
#include <sys/mman.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {

memfd_file::memfd_file(std::string_view content) : fd_(::memfd_create("sandboxd", MFD_CLOEXEC)) {
  if (fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "memfd_create");
  while (!content.empty()) {
    ssize_t n = ::write(fd_, content.data(), content.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      ::close(fd_);
      throw std::system_error(e, std::generic_category(), "write memfd");
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
}

memfd_file::~memfd_file() {
  ::close(fd_);
}

std::string memfd_file::read() const {
  std::string out;
  char buf[4096];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd_, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return out;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
}

} // namespace sandboxd::runtime
