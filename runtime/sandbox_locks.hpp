// sandbox_locks — one mutex per sandbox id, so that a driver serialises the calls
// that change one sandbox while calls for different sandboxes run in parallel.
// Entries are never dropped while a lock is held; an id's mutex lives as long as the
// table (ids are few compared with memory).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace sandboxd::runtime {

class sandbox_locks {
public:
  std::mutex& of(const std::string& id) {
    std::lock_guard<std::mutex> g(table_mutex_);
    auto& m = table_[id];
    if (!m)
      m = std::make_unique<std::mutex>();
    return *m;
  }

private:
  std::mutex table_mutex_;
  std::map<std::string, std::unique_ptr<std::mutex>> table_;
};

} // namespace sandboxd::runtime
