// netns — network namespaces a test makes for itself: the "sandboxes", "internet" and
// "outside" a network test talks between. Each is held by a descriptor of the test process,
// not a mount, so it vanishes with the process (however it ends) unless a process still
// runs in it; nothing a test sends through them leaves the machine.
#pragma once

#include "tests/support/process.hpp"

#include <functional>
#include <string>

namespace sandboxd::test {

class netns {
public:
  // A new namespace with its loopback up. Needs root; throws std::runtime_error otherwise.
  netns();
  ~netns();
  netns(const netns&) = delete;
  netns& operator=(const netns&) = delete;

  // "/proc/<pid>/fd/<n>": what nsenter --net=, `ip link ... netns` and the OCI runtimes take.
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

  // Runs `/bin/sh -c command` inside it.
  command_result run(const std::string& command) const;
  // Like run, but throws std::runtime_error naming the command and its output on failure.
  std::string check(const std::string& command) const;
  // Runs `f` on a thread that has entered the namespace, and waits for it: sockets made
  // there stay in the namespace whichever thread uses them later. Rethrows what `f` throws.
  void enter(const std::function<void()>& f) const;

private:
  int fd_ = -1;
  std::string path_;
};

// A veth pair: `a_name` in `a` (the test's current namespace when null) and `b_name` in
// `b`, both up, each with its address ("10.1.0.1/24", or empty for none).
void add_veth(const std::string& a_name, const netns* a, const std::string& a_address,
              const std::string& b_name, const netns* b, const std::string& b_address);

} // namespace sandboxd::test
