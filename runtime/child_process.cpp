#include "runtime/child_process.hpp"

#include "runtime/orphan_reaper.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

using clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

struct pipe_pair {
  int r = -1, w = -1;
  pipe_pair() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw_errno("pipe2");
    r = fds[0];
    w = fds[1];
  }
  ~pipe_pair() {
    close_r();
    close_w();
  }
  void close_r() {
    if (r >= 0)
      ::close(r);
    r = -1;
  }
  void close_w() {
    if (w >= 0)
      ::close(w);
    w = -1;
  }
};

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void child_main(const process_options& o, char* const* argv, int in, int out,
                             int err) {
  // The parent's descriptors go first: until they are closed this child shares the
  // parent's open files, the file log's lock among them.
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
    ::_exit(126);
  ::syscall(SYS_close_range, 3u, ~0u, 0u);
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (o.hide_cgroup2) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      ::_exit(126);
    ::umount2("/sys/fs/cgroup/unified", MNT_DETACH);
  }
  ::execv(argv[0], argv);
  ::_exit(127);
}

struct reader {
  int fd;
  output_stream which;
  std::string* into;
  bool open = true;
};

} // namespace

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t next = p.find(':', pos);
    if (next == std::string::npos)
      next = p.size();
    std::string cand = p.substr(pos, next - pos) + "/" + name;
    if (next > pos && ::access(cand.c_str(), X_OK) == 0)
      return cand;
    pos = next + 1;
  }
  return "";
}

process_result run_process(const process_options& o) {
  std::vector<char*> argv;
  for (auto& a : o.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pipe_pair out, err;
  std::optional<pipe_pair> in;
  int in_fd;
  int devnull = -1;
  if (o.stdin_data) {
    in.emplace();
    in_fd = in->r;
  } else {
    devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0)
      throw_errno("open /dev/null");
    in_fd = devnull;
  }

  pid_t pid;
  {
    auto lock = orphan_reaper::fork_lock();
    pid = ::fork();
    if (pid == 0)
      child_main(o, argv.data(), in_fd, out.w, err.w);
    if (pid < 0) {
      int e = errno;
      if (devnull >= 0)
        ::close(devnull);
      errno = e;
      throw_errno("fork " + o.argv[0]);
    }
    orphan_reaper::note_own_child(pid);
  }
  if (devnull >= 0)
    ::close(devnull);
  out.close_w();
  err.close_w();
  if (in) {
    in->close_r();
    ::fcntl(in->w, F_SETFL, O_NONBLOCK);
    ::signal(SIGPIPE, SIG_IGN);
  }
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));

  process_result res;
  reader readers[2] = {{out.r, output_stream::out, &res.out},
                       {err.r, output_stream::err, &res.err}};
  std::string_view pending = o.stdin_data ? std::string_view(*o.stdin_data) : std::string_view();
  if (in && pending.empty())
    in->close_w();
  const auto deadline = o.timeout ? clock::now() + *o.timeout : clock::time_point::max();
  auto kill_deadline = clock::time_point::max();
  bool exited = false;
  int status = 0;
  char buf[65536];

  auto read_some = [&](reader& rd, bool drain_only) {
    for (;;) {
      ssize_t n = ::read(rd.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        if (n == 0 || errno != EAGAIN)
          rd.open = false;
        return;
      }
      std::string_view chunk(buf, static_cast<size_t>(n));
      std::uint64_t room =
        o.max_output_bytes > rd.into->size() ? o.max_output_bytes - rd.into->size() : 0;
      if (chunk.size() > room) {
        res.truncated = true;
        chunk = chunk.substr(0, room);
      }
      rd.into->append(chunk);
      if (o.on_output && !chunk.empty())
        o.on_output(rd.which, chunk);
      if (!drain_only)
        return;
    }
  };

  while (!exited) {
    std::vector<pollfd> fds;
    for (auto& rd : readers)
      if (rd.open)
        fds.push_back({rd.fd, POLLIN, 0});
    int in_index = -1;
    if (in && in->w >= 0) {
      in_index = static_cast<int>(fds.size());
      fds.push_back({in->w, POLLOUT, 0});
    }
    int pid_index = -1;
    if (pidfd >= 0) {
      pid_index = static_cast<int>(fds.size());
      fds.push_back({pidfd, POLLIN, 0});
    }
    auto now = clock::now();
    auto next = std::min(deadline, kill_deadline);
    int wait_ms = 50;
    if (next != clock::time_point::max())
      wait_ms = static_cast<int>(std::clamp<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1, 0, 50));
    int r = ::poll(fds.data(), fds.size(), wait_ms);
    if (r < 0 && errno != EINTR)
      throw_errno("poll");
    for (auto& f : fds) {
      if (f.revents == 0)
        continue;
      for (auto& rd : readers)
        if (rd.open && f.fd == rd.fd)
          read_some(rd, false);
    }
    if (in_index >= 0 && fds[in_index].revents != 0) {
      ssize_t n = ::write(in->w, pending.data(), pending.size());
      if (n > 0)
        pending.remove_prefix(static_cast<size_t>(n));
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || pending.empty())
        in->close_w();
    }
    (void)pid_index;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      exited = true;
    now = clock::now();
    if (!exited && !res.timed_out && now >= deadline) {
      res.timed_out = true;
      if (o.on_timeout)
        o.on_timeout();
      kill_deadline = clock::now() + std::chrono::seconds(2);
    }
    if (!exited && now >= kill_deadline) {
      ::kill(pid, SIGKILL);
      kill_deadline = clock::time_point::max();
    }
  }
  orphan_reaper::forget_own_child(pid);
  if (pidfd >= 0)
    ::close(pidfd);
  for (auto& rd : readers) {
    if (!rd.open)
      continue;
    ::fcntl(rd.fd, F_SETFL, O_NONBLOCK);
    read_some(rd, true);
  }
  if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  }
  orphan_reaper::poke();
  return res;
}

} // namespace sandboxd::runtime
