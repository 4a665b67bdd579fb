#include "runtime/exec_guard.hpp"

#include "runtime/unique_fd.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

extern const unsigned char sandboxd_exec_guard_bytes[];
extern const std::size_t sandboxd_exec_guard_bytes_size;

namespace sandboxd::runtime {
namespace {

std::string_view guard_bytes() {
  return {reinterpret_cast<const char*>(sandboxd_exec_guard_bytes), sandboxd_exec_guard_bytes_size};
}

bool same_bytes(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
      (st.st_mode & 07777) != 0555 || static_cast<std::size_t>(st.st_size) != guard_bytes().size())
    return false;
  std::string have(guard_bytes().size(), '\0');
  std::size_t got = 0;
  for (ssize_t n;
       got < have.size() && (n = ::read(fd.get(), have.data() + got, have.size() - got)) > 0;)
    got += static_cast<std::size_t>(n);
  return got == have.size() && have == guard_bytes();
}

} // namespace

void install_exec_guard(const std::string& path) {
  if (same_bytes(path))
    return;
  std::string tmp = path + ".new";
  ::unlink(tmp.c_str());
  unique_fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500));
  if (!fd)
    throw std::system_error(errno, std::generic_category(), "create " + tmp);
  std::string_view b = guard_bytes();
  while (!b.empty()) {
    ssize_t n = ::write(fd.get(), b.data(), b.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw std::system_error(errno, std::generic_category(), "write " + tmp);
    b.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fchmod(fd.get(), 0555) != 0 || ::fsync(fd.get()) != 0)
    throw std::system_error(errno, std::generic_category(), "write " + tmp);
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "rename " + tmp);
}

std::vector<std::string> guarded_argv(const std::vector<std::string>& argv,
                                      std::chrono::milliseconds timeout) {
  std::vector<std::string> out = {k_exec_guard_in_sandbox,
                                  std::to_string(timeout.count() > 0 ? timeout.count() : 0), "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

} // namespace sandboxd::runtime
