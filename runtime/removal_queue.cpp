#include "runtime/removal_queue.hpp"

#include "runtime/beneath.hpp"
#include "runtime/names.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/tree_walk.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::runtime {
namespace {

// A name no other process or earlier run uses: pid, clock, counter.
std::string unique_name(const std::string& base) {
  static std::atomic<std::uint64_t> counter{0};
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".%d.%lld.%llu", static_cast<int>(::getpid()),
                static_cast<long long>(now), static_cast<unsigned long long>(counter++));
  return base + suffix;
}

// What a skeleton keeps: empty directories, and files whose content is truncated.
const std::set<std::string> kept_dirs = {"lower", "merged"};
const std::set<std::string> kept_files = {"sandbox.json", ".sandbox.json.next", "config.json"};

unique_fd open_dir(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd)
    throw std::system_error(errno, std::generic_category(), "open " + path);
  return fd;
}

// The names in the directory `dir` (an O_PATH handle is reopened for reading).
std::vector<std::string> names_in(int dir) {
  std::vector<std::string> out;
  int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
  if (d == nullptr) {
    if (fd >= 0)
      ::close(fd);
    return out;
  }
  while (dirent* e = ::readdir(d))
    if (std::string n = e->d_name; n != "." && n != "..")
      out.push_back(std::move(n));
  ::closedir(d);
  return out;
}

// `name` inside `dir` is an empty directory that is not a mount point.
bool is_plain_empty_dir(int dir, const std::string& name) {
  unique_fd fd = open_beneath(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  return fd && names_in(fd.get()).empty();
}

} // namespace

removal_queue::removal_queue(std::string data_dir, std::size_t max_spares)
    : data_dir_(std::move(data_dir)), removing_(data_dir_ + "/removing"),
      spare_(data_dir_ + "/spare"), max_spares_(max_spares) {
  fs::create_directories(removing_);
  fs::create_directories(spare_);
  ::chmod(removing_.c_str(), 0700);
  ::chmod(spare_.c_str(), 0700);
  data_fd_ = open_dir(data_dir_);
  removing_fd_ = open_dir(removing_);
  spare_fd_ = open_dir(spare_);
  // Leftovers of an earlier process are the first work of the thread; its spares are
  // not trusted (this process did not strip them) and are deleted too.
  for (const auto& n : names_in(spare_fd_.get())) {
    std::string name = unique_name(n);
    if (::renameat(spare_fd_.get(), n.c_str(), removing_fd_.get(), name.c_str()) != 0)
      remove_quietly(spare_fd_.get(), n);
  }
  for (auto& n : names_in(removing_fd_.get())) {
    pending_.push_back({std::move(n), false});
    ++taken_;
  }
  thread_ = std::thread([this] { run(); });
}

removal_queue::~removal_queue() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::pair<unique_fd, std::string> removal_queue::parent_of(const std::string& path) const {
  if (path.size() <= data_dir_.size() + 1 || path.compare(0, data_dir_.size(), data_dir_) != 0 ||
      path[data_dir_.size()] != '/')
    throw std::invalid_argument(path + " is not inside " + data_dir_ + "; refused");
  std::string rel = path.substr(data_dir_.size() + 1);
  size_t slash = rel.rfind('/');
  std::string leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
  std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  require_plain_component(leaf, "directory to move");
  for (size_t pos = 0; !dir.empty() && pos <= dir.size();) {
    size_t next = std::min(dir.find('/', pos), dir.size());
    require_plain_component(std::string_view(dir).substr(pos, next - pos), "directory to move");
    pos = next + 1;
  }
  unique_fd parent = dir.empty() ? unique_fd(::dup(data_fd_.get()))
                                 : open_beneath(data_fd_.get(), dir, O_PATH | O_DIRECTORY);
  if (!parent)
    throw std::system_error(errno, std::generic_category(), "open " + data_dir_ + "/" + dir);
  return {std::move(parent), leaf};
}

void removal_queue::remove_quietly(int dir, const std::string& name) noexcept {
  try {
    remove_tree_at(dir, name);
  } catch (...) {
    // Retried by the next process's sweep.
  }
}

void removal_queue::take(const std::string& path, bool recyclable) {
  auto [parent, leaf] = parent_of(path);
  std::string name = unique_name(leaf);
  if (::renameat(parent.get(), leaf.c_str(), removing_fd_.get(), name.c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "move " + path + " to " + removing_);
  {
    std::lock_guard<std::mutex> g(mu_);
    pending_.push_back({std::move(name), recyclable});
    ++taken_;
  }
  wake_.notify_one();
}

bool removal_queue::reuse(const std::string& path) {
  auto [parent, leaf] = parent_of(path);
  std::string name;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (spares_.empty())
      return false;
    name = std::move(spares_.back());
    spares_.pop_back();
  }
  if (::renameat(spare_fd_.get(), name.c_str(), parent.get(), leaf.c_str()) == 0)
    return true;
  remove_quietly(spare_fd_.get(), name);
  return false;
}

void removal_queue::drain() {
  std::unique_lock<std::mutex> l(mu_);
  std::uint64_t target = taken_;
  done_.wait(l, [&] { return finished_ >= target; });
}

std::size_t removal_queue::spares() const {
  std::lock_guard<std::mutex> g(mu_);
  return spares_.size();
}

bool removal_queue::strip(const std::string& name) const {
  unique_fd dir = open_beneath(removing_fd_.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  if (!dir)
    return false;
  bool ok = true;
  for (const auto& n : names_in(dir.get())) {
    struct stat st {};
    if (::fstatat(dir.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return false;
    if (kept_dirs.count(n) && S_ISDIR(st.st_mode)) {
      continue; // checked below: empty, and no mount point
    } else if (kept_files.count(n) && S_ISREG(st.st_mode)) {
      unique_fd f = open_beneath(dir.get(), n, O_WRONLY | O_TRUNC | O_NOFOLLOW);
      ok = ok && f;
    } else {
      remove_quietly(dir.get(), n); // checkpoint/, a layer of an older layout, anything else
    }
  }
  for (const auto& n : names_in(dir.get()))
    if (!kept_dirs.count(n) && !kept_files.count(n))
      return false;
  for (const auto& d : kept_dirs)
    ok = ok && is_plain_empty_dir(dir.get(), d);
  return ok;
}

void removal_queue::run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    wake_.wait(l, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty())
      return; // stopping, and everything taken is done
    job j = std::move(pending_.front());
    pending_.pop_front();
    bool room = spares_.size() < max_spares_;
    l.unlock();
    bool spared = false;
    if (j.recyclable && room && strip(j.name)) {
      std::string name = unique_name("spare");
      spared = ::renameat(removing_fd_.get(), j.name.c_str(), spare_fd_.get(), name.c_str()) == 0;
      if (spared) {
        std::lock_guard<std::mutex> g(mu_);
        spares_.push_back(std::move(name));
      }
    }
    if (!spared)
      remove_quietly(removing_fd_.get(), j.name);
    l.lock();
    ++finished_;
    done_.notify_all();
  }
}

} // namespace sandboxd::runtime
