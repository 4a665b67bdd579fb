#include "runtime/removal_queue.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
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
  fs::remove_all(path, ec); // a failure is retried by the next start's sweep
}

} // namespace

removal_queue::removal_queue(std::string dir) : dir_(std::move(dir)) {
  fs::create_directories(dir_);
  // Leftovers of an earlier process are the first work of the thread.
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir_, ec)) {
    pending_.push_back(e.path().filename().string());
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

void removal_queue::take(const std::string& path) {
  std::string name = unique_name(fs::path(path).filename().string());
  if (::rename(path.c_str(), (dir_ + "/" + name).c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "move " + path + " to " + dir_);
  {
    std::lock_guard<std::mutex> g(mu_);
    pending_.push_back(std::move(name));
    ++taken_;
  }
  wake_.notify_one();
}

void removal_queue::drain() {
  std::unique_lock<std::mutex> l(mu_);
  std::uint64_t target = taken_;
  done_.wait(l, [&] { return removed_ >= target; });
}

void removal_queue::run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    wake_.wait(l, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty())
      return; // stopping, and everything taken is removed
    std::string name = std::move(pending_.front());
    pending_.pop_front();
    l.unlock();
    remove_tree(dir_ + "/" + name);
    l.lock();
    ++removed_;
    done_.notify_all();
  }
}

} // namespace sandboxd::runtime
