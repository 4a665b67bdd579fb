// Unit tests of host_process: /proc/<pid>/stat parsing (a command name with spaces and
// parentheses), and signalling held processes — children of this test — only while they
// are the process opened: a child is found below its parent and nowhere else, a held
// process that has been reaped is never signalled again, and a tree that keeps forking
// is stopped and killed whole; a /proc entry whose read fails reads as empty and never
// throws (small_text).
#define BOOST_TEST_MODULE host_process
#include <boost/test/unit_test.hpp>

#include "runtime/host_process.hpp"
#include "runtime/small_text.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace sandboxd::runtime;

namespace {

// A child of this process that runs `sh -c script`.
pid_t spawn_sh(const char* script) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

host_process self() {
  auto me = host_process::open(::getpid(), [](pid_t, const proc_stat&) { return true; });
  BOOST_TEST_REQUIRE(me.has_value());
  return std::move(*me);
}

// Waits (up to 10 s) for `pred`.
template <class F>
bool eventually(F pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

} // namespace

// A read that fails after the open (a directory: EISDIR; the entries of a process that ended
// meanwhile: ESRCH) is an empty answer, not an exception out of a signal or kill path.
BOOST_AUTO_TEST_CASE(an_entry_whose_read_fails_reads_as_empty) {
  std::string got = "unset";
  BOOST_CHECK_NO_THROW(got = read_small_text("/proc/self"));
  BOOST_TEST(got.empty());
  const pid_t child = spawn_sh("exit 0");
  BOOST_REQUIRE(child > 0);
  // A zombie until reaped: its task entries still open, their reads fail.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string task = "/proc/" + std::to_string(child) + "/task/" + std::to_string(child);
  BOOST_CHECK_NO_THROW(got = read_small_file(task + "/children"));
  BOOST_TEST(got.empty());
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_CHECK_NO_THROW(got = read_small_text("/proc/" + std::to_string(child) + "/stat"));
  BOOST_TEST(got.empty());
}

BOOST_AUTO_TEST_CASE(stat_fields_follow_the_last_parenthesis) {
  auto s = parse_proc_stat("4242 (a b) c) (d) S 17 4242 4242 0 -1 4194560 75 0 0 0 0 0 0 0 20 0 "
                           "1 0 987654 2211840 100\n");
  BOOST_TEST_REQUIRE(s.has_value());
  BOOST_TEST(s->state == 'S');
  BOOST_TEST(s->ppid == 17);
  BOOST_TEST(s->start_ticks == 987654ull);
  BOOST_TEST(!parse_proc_stat("4242 (no end S 17").has_value());
  BOOST_TEST(!parse_proc_stat("4242 (short) S 17 1 1").has_value());
}

BOOST_AUTO_TEST_CASE(own_start_time_is_not_in_the_future) {
  auto me = parse_proc_stat(std::string(
    std::istreambuf_iterator<char>(*std::make_unique<std::ifstream>("/proc/self/stat")), {}));
  BOOST_TEST_REQUIRE(me.has_value());
  BOOST_TEST(me->start_ticks <= boot_ticks_now());
  BOOST_TEST(me->ppid == ::getppid());
}

BOOST_AUTO_TEST_CASE(a_child_is_held_below_its_parent_only) {
  pid_t c = spawn_sh("exec sleep 30");
  host_process me = self();
  auto held = host_process::open_child(c, me);
  BOOST_TEST_REQUIRE(held.has_value());
  // Not a child of our parent, nor of itself.
  auto parent = host_process::open(::getppid(), [](pid_t, const proc_stat&) { return true; });
  BOOST_TEST_REQUIRE(parent.has_value());
  BOOST_TEST(!host_process::open_child(c, *parent).has_value());
  BOOST_TEST(!host_process::open_child(c, *held).has_value());
  // Listed among our children.
  bool listed = false;
  for (auto& k : me.children())
    listed = listed || k.pid() == c;
  BOOST_TEST(listed);
  BOOST_TEST(held->signal(SIGKILL));
  int status = 0;
  BOOST_TEST(::waitpid(c, &status, 0) == c);
  BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
}

BOOST_AUTO_TEST_CASE(a_reaped_process_is_never_signalled_again) {
  host_process me = self();
  // The held child is reaped and its number given to a new process (the kernel's next
  // pid is set through ns_last_pid; another fork on the machine may take it first: retry).
  for (int attempt = 0; attempt < 50; ++attempt) {
    pid_t c = spawn_sh("exec sleep 30");
    auto held = host_process::open_child(c, me);
    BOOST_TEST_REQUIRE(held.has_value());
    ::kill(c, SIGKILL);
    ::waitpid(c, nullptr, 0);
    BOOST_TEST(!held->signal(0));
    std::ofstream("/proc/sys/kernel/ns_last_pid") << (c - 1);
    pid_t reuse = spawn_sh("exec sleep 30");
    if (reuse != c) {
      ::kill(reuse, SIGKILL);
      ::waitpid(reuse, nullptr, 0);
      continue;
    }
    // The number now names another process: the held one is still gone, and the new one
    // is not hit.
    BOOST_TEST(!held->signal(SIGKILL));
    BOOST_TEST(::waitpid(reuse, nullptr, WNOHANG) == 0);
    BOOST_TEST(::kill(reuse, 0) == 0);
    ::kill(reuse, SIGKILL);
    ::waitpid(reuse, nullptr, 0);
    BOOST_TEST_MESSAGE("pid " << c << " reused after " << attempt + 1 << " attempt(s)");
    return;
  }
  BOOST_FAIL("no pid could be reused in 50 attempts (ns_last_pid)");
}

BOOST_AUTO_TEST_CASE(a_forking_tree_is_stopped_and_killed_whole) {
  // The top is a child subreaper, as the guard is in a sandbox: what is orphaned below it
  // (a double fork, setsid) stays below it. Its sleeps carry this process's pid.
  const std::string a = "1" + std::to_string(::getpid()) + "1";
  const std::string b = "1" + std::to_string(::getpid()) + "2";
  const std::string script = "(setsid sh -c 'while :; do sleep " + a +
                             " & sleep 0.01; done' &); "
                             "while :; do (sleep " +
                             b + " &); sleep 0.01; done";
  pid_t top = ::fork();
  if (top == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  host_process me = self();
  auto root = host_process::open_child(top, me);
  BOOST_TEST_REQUIRE(root.has_value());
  BOOST_TEST(eventually([&] { return held_descendants(*root).size() > 10; }));
  kill_held_tree(*root);
  int status = 0;
  BOOST_TEST(::waitpid(top, &status, 0) == top);
  BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  // Nothing of the tree runs on (a killed process may take a moment to go).
  std::string left;
  BOOST_TEST(eventually([&] {
               left.clear();
               for (auto& e : std::filesystem::directory_iterator("/proc")) {
                 std::ifstream in(e.path() / "cmdline");
                 std::string cmd((std::istreambuf_iterator<char>(in)), {});
                 if (cmd.find(a) != std::string::npos || cmd.find(b) != std::string::npos)
                   left += e.path().filename().string() + " ";
               }
               return left.empty();
             }),
             left);
}
