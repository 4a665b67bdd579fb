// sandbox_locks — one mutex per sandbox id, so that a driver serialises the calls that
// change one sandbox while calls for different sandboxes run in parallel. An id's entry
// lives only while a call holds or waits for its lock: ids that callers make up (valid
// or not, existing or not) leave nothing behind.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sandboxd::runtime {

class sandbox_locks {
  struct entry {
    std::mutex m;
    std::size_t users = 0; // holders and waiters; guarded by table_mutex_
  };

public:
  // Holds the lock of one id until destroyed.
  class guard {
  public:
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard() { owner_->release(id_, entry_); }

  private:
    friend class sandbox_locks;
    guard(sandbox_locks* owner, std::string id, entry* e)
        : owner_(owner), id_(std::move(id)), entry_(e) {}
    sandbox_locks* owner_;
    std::string id_;
    entry* entry_;
  };

  guard lock(const std::string& id) {
    entry* e;
    {
      std::lock_guard<std::mutex> g(table_mutex_);
      auto& slot = table_[id];
      if (!slot)
        slot = std::make_unique<entry>();
      ++slot->users;
      e = slot.get();
    }
    e->m.lock();
    return guard(this, id, e);
  }

  // Ids with an entry now (for tests: 0 when no call is in flight).
  std::size_t size() const {
    std::lock_guard<std::mutex> g(table_mutex_);
    return table_.size();
  }

private:
  void release(const std::string& id, entry* e) {
    e->m.unlock();
    std::lock_guard<std::mutex> g(table_mutex_);
    if (--e->users == 0)
      table_.erase(id);
  }

  mutable std::mutex table_mutex_;
  std::unordered_map<std::string, std::unique_ptr<entry>> table_;
};

} // namespace sandboxd::runtime
