// attack_fixture — what the attack suite shares: the driver fixture (host jail, data
// directory, clean-up), a shell inside a sandbox, and a way to act as another host user
// (a forked child that drops to uid:gid with no groups, then execs or opens), so that an
// attack "by an unprivileged host user" is made by one.
#pragma once

#include "runtime/oci_driver.hpp"
#include "runtime/unique_fd.hpp"
#include "tests/runtime/driver_fixture.hpp"

#include <cerrno>
#include <fcntl.h>
#include <fstream>
#include <grp.h>
#include <sched.h>
#include <string>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace sandboxd::test {

constexpr uid_t k_nobody = 65534;

struct as_user_result {
  int exit_code = -1; // of the program; 127 when it could not be executed
  int exec_errno = 0; // why exec failed (EACCES, ...), 0 when it ran
  std::string output; // its stdout
};

// Runs argv[0..] as uid:gid with no supplementary groups: the program at `path`, or, when
// `fd` >= 0, the file open as `fd` (execveat with AT_EMPTY_PATH: no directory on the way
// is searched, so only the file's own mode and its mount's flags decide).
inline as_user_result run_as(uid_t uid, gid_t gid, const std::string& path, int fd,
                             const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* env[] = {nullptr};
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
        ::setresuid(uid, uid, uid) != 0)
      ::_exit(125);
    if (fd >= 0)
      ::syscall(SYS_execveat, fd, "", args.data(), env, AT_EMPTY_PATH);
    else
      ::execve(path.c_str(), args.data(), env);
    int e = errno;
    (void)!::write(err[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  as_user_result r;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;)
    r.output.append(buf, static_cast<size_t>(n));
  int e = 0;
  if (::read(err[0], &e, sizeof e) == static_cast<ssize_t>(sizeof e))
    r.exec_errno = e;
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Opens `path` (relative to `dirfd`, or absolute) as uid:gid with `flags`; the errno
// the kernel gave, 0 when it opened.
inline int open_as(uid_t uid, gid_t gid, int dirfd, const std::string& path, int flags) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe");
  pid_t pid = ::fork();
  if (pid == 0) {
    int e = 0;
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
        ::setresuid(uid, uid, uid) != 0)
      e = EPERM;
    else if (::openat(dirfd, path.c_str(), flags) < 0)
      e = errno;
    (void)!::write(p[1], &e, sizeof e);
    ::_exit(0);
  }
  ::close(p[1]);
  int e = -1;
  if (::read(p[0], &e, sizeof e) != static_cast<ssize_t>(sizeof e))
    e = -1;
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  return e;
}

struct attack_fixture : driver_fixture {
  // Runs a script in the sandbox; fails the test if the driver refuses.
  runtime::exec_result sh(const std::string& id, const std::string& script,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    runtime::exec_request r;
    r.argv = {"/bin/sh", "-c", script};
    r.timeout = timeout;
    auto res = d->exec(id, r);
    BOOST_TEST_REQUIRE(res.ok(), (res ? "" : res.err().message));
    return res.value();
  }

  // The record's host id base of a sandbox (its root's host uid and gid).
  std::uint32_t id_base(const std::string& id) {
    std::ifstream in(data + "/sandboxes/" + id + "/sandbox.json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto at = text.find("\"id_base\":");
    BOOST_TEST_REQUIRE(at != std::string::npos, "no id_base in the record of " << id);
    return static_cast<std::uint32_t>(std::stoul(text.substr(at + 10)));
  }

  std::string merged(const std::string& id) { return data + "/sandboxes/" + id + "/merged"; }
  std::string upper(const std::string& id) { return data + "/layers/" + id + "/upper"; }
};

} // namespace sandboxd::test
