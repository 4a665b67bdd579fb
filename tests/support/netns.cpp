#include "tests/support/netns.hpp"

#include <exception>
#include <fcntl.h>
#include <sched.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace sandboxd::test {
namespace {

std::string in(const netns* ns, const std::string& command) {
  return ns ? "nsenter --net=" + ns->path() + " " + command : command;
}

} // namespace

netns::netns() {
  std::exception_ptr failed;
  std::thread t([&] {
    // A thread of its own: unshare moves only the calling thread.
    if (::unshare(CLONE_NEWNET) != 0) {
      failed = std::make_exception_ptr(std::runtime_error("netns: unshare(CLONE_NEWNET) failed"));
      return;
    }
    fd_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  });
  t.join();
  if (failed)
    std::rethrow_exception(failed);
  if (fd_ < 0)
    throw std::runtime_error("netns: cannot open the new namespace");
  path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_);
  check("ip link set lo up");
}

netns::~netns() {
  if (fd_ >= 0)
    ::close(fd_);
}

command_result netns::run(const std::string& command) const {
  return run_shell("nsenter --net=" + path_ + " /bin/sh -c " + shell_quote(command));
}

std::string netns::check(const std::string& command) const {
  auto r = run(command);
  if (r.exit_code != 0)
    throw std::runtime_error("in a test netns: " + command + " failed: " + r.output);
  return r.output;
}

void netns::enter(const std::function<void()>& f) const {
  std::exception_ptr failed;
  std::thread t([&] {
    try {
      if (::setns(fd_, CLONE_NEWNET) != 0)
        throw std::runtime_error("netns: setns failed");
      f();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  t.join();
  if (failed)
    std::rethrow_exception(failed);
}

void add_veth(const std::string& a_name, const netns* a, const std::string& a_address,
              const std::string& b_name, const netns* b, const std::string& b_address) {
  std::string add = "ip link add " + a_name + " type veth peer name " + b_name;
  if (b)
    add += " netns " + b->path();
  check_shell(in(a, add));
  if (!a_address.empty())
    check_shell(in(a, "ip addr add " + a_address + " dev " + a_name));
  check_shell(in(a, "ip link set " + a_name + " up"));
  if (!b_address.empty())
    check_shell(in(b, "ip addr add " + b_address + " dev " + b_name));
  check_shell(in(b, "ip link set " + b_name + " up"));
}

} // namespace sandboxd::test
