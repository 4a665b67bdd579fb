#include "runtime/removal_queue.hpp"

#include "runtime/overlay_mount.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
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

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec); // a failure is retried by the next process's sweep
}

// What a skeleton keeps: empty directories, and files whose content is truncated.
const std::set<std::string> kept_dirs = {"work", "merged"};
const std::set<std::string> kept_files = {"sandbox.json", ".sandbox.json.next", "config.json"};

bool is_plain_empty_dir(const std::string& path) {
  struct stat st {};
  std::error_code ec;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && fs::is_empty(path, ec) && !ec &&
         !is_mount_point(path);
}

} // namespace

removal_queue::removal_queue(std::string data_dir, std::size_t max_spares)
    : removing_(data_dir + "/removing"), spare_(data_dir + "/spare"), max_spares_(max_spares) {
  fs::create_directories(removing_);
  fs::create_directories(spare_);
  // Leftovers of an earlier process are the first work of the thread; its spares are
  // not trusted (this process did not strip them) and are deleted too.
  std::error_code ec;
  for (auto& e : fs::directory_iterator(spare_, ec)) {
    std::string name = unique_name(e.path().filename().string());
    if (::rename(e.path().c_str(), (removing_ + "/" + name).c_str()) != 0)
      remove_tree(e.path());
  }
  for (auto& e : fs::directory_iterator(removing_, ec)) {
    pending_.push_back({e.path().filename().string(), false});
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

void removal_queue::take(const std::string& path, bool recyclable) {
  std::string name = unique_name(fs::path(path).filename().string());
  if (::rename(path.c_str(), (removing_ + "/" + name).c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "move " + path + " to " + removing_);
  {
    std::lock_guard<std::mutex> g(mu_);
    pending_.push_back({std::move(name), recyclable});
    ++taken_;
  }
  wake_.notify_one();
}

bool removal_queue::reuse(const std::string& path) {
  std::string name;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (spares_.empty())
      return false;
    name = std::move(spares_.back());
    spares_.pop_back();
  }
  if (::rename((spare_ + "/" + name).c_str(), path.c_str()) == 0)
    return true;
  remove_tree(spare_ + "/" + name);
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

bool removal_queue::strip(const std::string& path) const {
  std::error_code ec;
  bool ok = true;
  for (auto& e : fs::directory_iterator(path, ec)) {
    std::string name = e.path().filename().string();
    std::string p = e.path().string();
    if (kept_dirs.count(name)) {
      if (name == "work")
        for (auto& w : fs::directory_iterator(p, ec))
          remove_tree(w.path());
    } else if (kept_files.count(name) && e.is_regular_file(ec) && !e.is_symlink(ec)) {
      ok = ok && ::truncate(p.c_str(), 0) == 0;
    } else {
      remove_tree(p); // upper/ (the writable layer), checkpoint/, anything else
    }
  }
  if (ec)
    return false;
  // A new, empty writable layer for the next sandbox: made here, off its create.
  ok = ok && ::mkdir((path + "/upper").c_str(), 0755) == 0 && is_plain_empty_dir(path + "/upper");
  for (auto& e : fs::directory_iterator(path, ec)) {
    std::string name = e.path().filename().string();
    if (!kept_dirs.count(name) && !kept_files.count(name) && name != "upper")
      return false;
  }
  for (const auto& d : kept_dirs)
    ok = ok && is_plain_empty_dir(path + "/" + d);
  return ok && !ec;
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
    std::string path = removing_ + "/" + j.name;
    bool spared = false;
    if (j.recyclable && room && strip(path)) {
      std::string name = unique_name("spare");
      spared = ::rename(path.c_str(), (spare_ + "/" + name).c_str()) == 0;
      if (spared) {
        std::lock_guard<std::mutex> g(mu_);
        spares_.push_back(std::move(name));
      }
    }
    if (!spared)
      remove_tree(path);
    l.lock();
    ++finished_;
    done_.notify_all();
  }
}

} // namespace sandboxd::runtime
