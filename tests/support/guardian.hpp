// guardian — runs a cleanup shell command exactly once when its owner goes away,
// however it goes: the destructor, an exception, abort, or SIGKILL.
//
// The guardian is a child process in its own session that reads a pipe whose write
// end only the owner holds. The pipe reaches end of file when the owner closes it or
// dies; the guardian then runs the command and exits. This is what lets a test binary
// that crashes leave no PostgreSQL server or Kafka broker behind.
#pragma once

#include <string>
#include <sys/types.h>

namespace sandboxd::test {

class guardian {
public:
  explicit guardian(const std::string& cleanup_command);
  // Runs the cleanup now and waits until it has finished.
  ~guardian();
  guardian(const guardian&) = delete;
  guardian& operator=(const guardian&) = delete;

  // Runs the cleanup command now, waits for it, and arms nothing further.
  void fire();

private:
  pid_t pid_ = -1;
  int write_fd_ = -1;
};

} // namespace sandboxd::test
