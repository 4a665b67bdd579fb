#include "runtime/child_process.hpp"

#include "runtime/orphan_reaper.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
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

// Where one of the child's output streams goes: its capture, up to the cap, and the
// caller's callback.
struct reader {
  int fd;
  output_stream which;
  std::string* into;
  bool open = true;
  std::uint64_t taken = 0; // bytes within the cap: streamed, or kept in `into`
};

// One child from fork to exit. Its steps: start (fork and exec with the pipes in place),
// then poll rounds (read what output is ready, feed stdin, notice the exit, apply the
// timeout) until it has exited, then finish (read what is left, decode the status).
class running_child {
public:
  explicit running_child(const process_options& o) : o_(o) {
    start();
    readers_[0] = {out_.r, output_stream::out, &res_.out};
    readers_[1] = {err_.r, output_stream::err, &res_.err};
    if (o_.timeout)
      deadline_ = clock::now() + *o_.timeout;
  }
  ~running_child() { stop_feeder(); }
  running_child(const running_child&) = delete;
  running_child& operator=(const running_child&) = delete;

  bool exited() const { return exited_; }
  void poll_round();
  process_result finish();

private:
  void start();
  void read_some(reader& rd, bool drain_only);
  void feed_stdin();
  void start_feeder();
  void stop_feeder();
  void apply_deadlines();

  const process_options& o_;
  pipe_pair out_, err_;
  std::optional<pipe_pair> in_;
  std::string_view pending_; // stdin not yet written
  pid_t pid_ = -1;
  int pidfd_ = -1;       // wakes poll when the child exits
  std::thread feeder_;   // pulls stdin_source into the pipe
  int feeder_stop_ = -1; // eventfd: the child has ended, stop feeding
  reader readers_[2];
  process_result res_;
  clock::time_point deadline_ = clock::time_point::max();
  clock::time_point kill_deadline_ = clock::time_point::max();
  bool exited_ = false;
  int status_ = 0;
  char buf_[65536];
};

void running_child::start() {
  std::vector<char*> argv;
  for (auto& a : o_.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int in_fd;
  int devnull = -1;
  if (o_.stdin_data || o_.stdin_source) {
    in_.emplace();
    in_fd = in_->r;
  } else {
    devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0)
      throw_errno("open /dev/null");
    in_fd = devnull;
  }
  {
    auto lock = orphan_reaper::fork_lock();
    pid_ = ::fork();
    if (pid_ == 0)
      child_main(o_, argv.data(), in_fd, out_.w, err_.w);
    if (pid_ < 0) {
      int e = errno;
      if (devnull >= 0)
        ::close(devnull);
      errno = e;
      throw_errno("fork " + o_.argv[0]);
    }
    orphan_reaper::note_own_child(pid_);
  }
  if (devnull >= 0)
    ::close(devnull);
  out_.close_w();
  err_.close_w();
  if (in_) {
    in_->close_r();
    ::fcntl(in_->w, F_SETFL, O_NONBLOCK);
    ::signal(SIGPIPE, SIG_IGN);
    if (o_.stdin_source) {
      start_feeder();
    } else {
      pending_ = *o_.stdin_data;
      if (pending_.empty())
        in_->close_w();
    }
  }
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

void running_child::read_some(reader& rd, bool drain_only) {
  for (;;) {
    ssize_t n = ::read(rd.fd, buf_, sizeof buf_);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0 || errno != EAGAIN)
        rd.open = false;
      return;
    }
    std::string_view chunk(buf_, static_cast<size_t>(n));
    std::uint64_t room = o_.max_output_bytes > rd.taken ? o_.max_output_bytes - rd.taken : 0;
    if (chunk.size() > room) {
      res_.truncated = true;
      chunk = chunk.substr(0, room);
    }
    rd.taken += chunk.size();
    // Streamed output is passed on, and only its head kept: memory does not grow with it.
    const std::size_t keep = !o_.on_output
                               ? chunk.size()
                               : std::min(chunk.size(), k_kept_when_streamed > rd.into->size()
                                                          ? k_kept_when_streamed - rd.into->size()
                                                          : std::size_t{0});
    rd.into->append(chunk.substr(0, keep));
    if (o_.on_output && !chunk.empty())
      o_.on_output(rd.which, chunk);
    if (!drain_only)
      return;
  }
}

void running_child::feed_stdin() {
  ssize_t n = ::write(in_->w, pending_.data(), pending_.size());
  if (n > 0)
    pending_.remove_prefix(static_cast<size_t>(n));
  if ((n < 0 && errno != EAGAIN && errno != EINTR) || pending_.empty())
    in_->close_w();
}

void running_child::start_feeder() {
  feeder_stop_ = ::eventfd(0, EFD_CLOEXEC);
  if (feeder_stop_ < 0)
    throw_errno("eventfd");
  int w = in_->w; // the feeder's own from here on
  in_->w = -1;
  feeder_ = std::thread([this, w] {
    std::string chunk;
    bool open = true;
    while (open && o_.stdin_source(chunk)) {
      std::string_view left = chunk;
      while (open && !left.empty()) {
        pollfd fds[2] = {{w, POLLOUT, 0}, {feeder_stop_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR)
          open = false;
        else if (fds[1].revents != 0)
          open = false;
        else if (fds[0].revents != 0) {
          ssize_t n = ::write(w, left.data(), left.size());
          if (n > 0)
            left.remove_prefix(static_cast<size_t>(n));
          else if (n < 0 && errno != EAGAIN && errno != EINTR)
            open = false; // the child closed its stdin
        }
      }
      chunk.clear();
      if (open) {
        pollfd stop{feeder_stop_, POLLIN, 0};
        open = ::poll(&stop, 1, 0) == 0;
      }
    }
    ::close(w);
  });
}

void running_child::stop_feeder() {
  if (feeder_stop_ < 0)
    return;
  std::uint64_t one = 1;
  (void)!::write(feeder_stop_, &one, sizeof one);
  if (feeder_.joinable())
    feeder_.join();
  ::close(feeder_stop_);
  feeder_stop_ = -1;
}

void running_child::apply_deadlines() {
  auto now = clock::now();
  if (!exited_ && !res_.timed_out && now >= deadline_) {
    res_.timed_out = true;
    if (o_.on_timeout)
      o_.on_timeout();
    kill_deadline_ = clock::now() + std::chrono::seconds(2);
  }
  if (!exited_ && now >= kill_deadline_) {
    ::kill(pid_, SIGKILL);
    kill_deadline_ = clock::time_point::max();
  }
}

void running_child::poll_round() {
  std::vector<pollfd> fds;
  for (auto& rd : readers_)
    if (rd.open)
      fds.push_back({rd.fd, POLLIN, 0});
  int in_index = -1;
  if (in_ && in_->w >= 0) {
    in_index = static_cast<int>(fds.size());
    fds.push_back({in_->w, POLLOUT, 0});
  }
  if (pidfd_ >= 0)
    fds.push_back({pidfd_, POLLIN, 0});
  auto next = std::min(deadline_, kill_deadline_);
  int wait_ms = 50;
  if (next != clock::time_point::max())
    wait_ms = static_cast<int>(std::clamp<long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now()).count() + 1, 0,
      50));
  if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
    throw_errno("poll");
  for (auto& f : fds) {
    if (f.revents == 0)
      continue;
    for (auto& rd : readers_)
      if (rd.open && f.fd == rd.fd)
        read_some(rd, false);
  }
  if (in_index >= 0 && fds[in_index].revents != 0)
    feed_stdin();
  if (::waitpid(pid_, &status_, WNOHANG) == pid_)
    exited_ = true;
  apply_deadlines();
}

process_result running_child::finish() {
  stop_feeder();
  orphan_reaper::forget_own_child(pid_);
  if (pidfd_ >= 0)
    ::close(pidfd_);
  for (auto& rd : readers_) {
    if (!rd.open)
      continue;
    ::fcntl(rd.fd, F_SETFL, O_NONBLOCK);
    read_some(rd, true);
  }
  if (WIFEXITED(status_)) {
    res_.exit_code = WEXITSTATUS(status_);
  } else if (WIFSIGNALED(status_)) {
    res_.signal = WTERMSIG(status_);
  }
  orphan_reaper::poke();
  return std::move(res_);
}

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
  running_child child(o);
  while (!child.exited())
    child.poll_round();
  return child.finish();
}

} // namespace sandboxd::runtime
