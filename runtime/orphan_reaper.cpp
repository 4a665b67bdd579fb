#include "runtime/orphan_reaper.hpp"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <dirent.h>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

struct reaper_state {
  std::mutex fork_mutex; // guards own, adopted; held across fork()
  std::set<pid_t> own;
  std::set<pid_t> adopted;

  std::mutex run_mutex; // guards users, thread, stop, poked
  std::condition_variable wake;
  int users = 0;
  bool stop = false;
  bool poked = false;
  std::thread thread;
};

reaper_state& state() {
  static reaper_state s;
  return s;
}

// The pid's state letter and command name from /proc/<pid>/stat.
bool read_stat(pid_t pid, char& st, std::string& comm) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line))
    return false;
  auto open = line.find('(');
  auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= line.size())
    return false;
  comm = line.substr(open + 1, close - open - 1);
  st = line[close + 2];
  return true;
}

std::set<pid_t> children() {
  std::set<pid_t> out;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr)
    return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.')
      continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    pid_t p;
    while (in >> p)
      out.insert(p);
  }
  ::closedir(d);
  return out;
}

void reap_once() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.fork_mutex);
  for (pid_t p : children()) {
    if (s.own.count(p))
      continue;
    char st = 0;
    std::string comm;
    if (!read_stat(p, st, comm) || st != 'Z')
      continue;
    bool ours = s.adopted.count(p) || comm == "exe" || comm == "runsc" || comm == "crun";
    if (ours && ::waitpid(p, nullptr, WNOHANG) == p)
      s.adopted.erase(p);
  }
}

void loop() {
  auto& s = state();
  std::unique_lock<std::mutex> lk(s.run_mutex);
  while (!s.stop) {
    s.wake.wait_for(lk, std::chrono::milliseconds(10), [&] { return s.stop || s.poked; });
    s.poked = false;
    lk.unlock();
    reap_once();
    lk.lock();
  }
}

} // namespace

orphan_reaper::user::user() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.run_mutex);
  if (s.users++ == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    s.stop = false;
    s.thread = std::thread(loop);
  }
}

orphan_reaper::user::~user() {
  auto& s = state();
  std::unique_lock<std::mutex> lk(s.run_mutex);
  if (--s.users > 0)
    return;
  s.stop = true;
  s.wake.notify_all();
  std::thread t = std::move(s.thread);
  lk.unlock();
  t.join();
  reap_once();
}

std::unique_lock<std::mutex> orphan_reaper::fork_lock() {
  return std::unique_lock<std::mutex>(state().fork_mutex);
}

void orphan_reaper::note_own_child(pid_t pid) {
  state().own.insert(pid);
}

void orphan_reaper::forget_own_child(pid_t pid) {
  std::lock_guard<std::mutex> g(state().fork_mutex);
  state().own.erase(pid);
}

void orphan_reaper::adopt(pid_t pid) {
  std::lock_guard<std::mutex> g(state().fork_mutex);
  state().adopted.insert(pid);
}

void orphan_reaper::poke() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.run_mutex);
  s.poked = true;
  s.wake.notify_all();
}

} // namespace sandboxd::runtime
