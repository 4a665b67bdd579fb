#include "tests/support/guardian.hpp"

#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <signal.h>
#include <stdexcept>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace sandboxd::test {

guardian::guardian(const std::string& cleanup_command) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  // Built before fork: the child may only call async-signal-safe functions.
  std::string script = "cat >/dev/null; " + cleanup_command;
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::system_error(e, std::generic_category(), "fork guardian");
  }
  if (pid == 0) {
    ::setsid();
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    ::dup2(fds[0], 0); // dup2 clears O_CLOEXEC on the copy
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0)
      ::dup2(null, 1);
    ::execv("/bin/sh", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[0]);
  pid_ = pid;
  write_fd_ = fds[1];
}

guardian::~guardian() {
  fire();
}

void guardian::fire() {
  if (write_fd_ < 0)
    return;
  ::close(write_fd_);
  write_fd_ = -1;
  // The guardian is our child, but a test may reap children itself (a subreaper
  // runtime does); then the status is gone and we wait for the process to vanish.
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid_, &status, 0);
    if (r == pid_ || (r < 0 && errno != EINTR))
      break;
  }
  for (int i = 0; i < 600 && ::kill(pid_, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pid_ = -1;
}

} // namespace sandboxd::test
