#include "runtime/exec_registry.hpp"

namespace sandboxd::runtime {

exec_registry::entry::~entry() {
  if (!slot_)
    return;
  {
    std::lock_guard<std::mutex> g(slot_->mu); // waits for a signal in progress
    slot_->gone = true;
  }
  std::lock_guard<std::mutex> g(registry_->mu_);
  if (auto it = registry_->running_.find(key_);
      it != registry_->running_.end() && it->second == slot_) {
    registry_->running_.erase(it);
    if (registry_->ended_.insert(key_).second) {
      registry_->ended_order_.push_back(key_);
      if (registry_->ended_order_.size() > k_ended_kept) {
        registry_->ended_.erase(registry_->ended_order_.front());
        registry_->ended_order_.pop_front();
      }
    }
  }
}

outcome<exec_registry::entry> exec_registry::add(const std::string& id, const std::string& exec_id,
                                                 signaller s, resizer r) {
  if (exec_id.empty())
    return entry();
  auto sl = std::make_shared<slot>();
  sl->signaller = std::move(s);
  sl->resizer = std::move(r);
  std::lock_guard<std::mutex> g(mu_);
  auto [it, fresh] = running_.emplace(key(id, exec_id), sl);
  if (!fresh)
    return make_error(errc::conflict, "sandbox " + id + " already runs an exec with id " + exec_id +
                                        "; pick another exec id");
  added_.notify_all();
  return entry(this, it->first, sl);
}

outcome<void> exec_registry::signal(const std::string& id, const std::string& exec_id, int sig) {
  if (sig < 0 || sig > 64)
    return make_error(errc::invalid_argument, "signal " + std::to_string(sig) +
                                                " does not exist; use 1-64 (or 0 to check)");
  std::shared_ptr<slot> sl;
  {
    const std::string k = key(id, exec_id);
    std::unique_lock<std::mutex> g(mu_);
    added_.wait_for(g, k_start_wait, [&] { return running_.count(k) || ended_.count(k); });
    if (auto it = running_.find(k); it != running_.end())
      sl = it->second;
  }
  auto missing = [&] {
    return make_error(errc::not_found, "no exec " + exec_id + " is running in sandbox " + id +
                                         "; list the running execs");
  };
  if (!sl)
    return missing();
  std::lock_guard<std::mutex> g(sl->mu);
  if (sl->gone)
    return missing();
  if (sig == 0)
    return {};
  return sl->signaller(sig);
}

outcome<void> exec_registry::resize(const std::string& id, const std::string& exec_id,
                                    std::uint16_t cols, std::uint16_t rows) {
  std::shared_ptr<slot> sl;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = running_.find(key(id, exec_id)); it != running_.end())
      sl = it->second;
  }
  if (!sl)
    return make_error(errc::not_found, "no exec " + exec_id + " is running in sandbox " + id +
                                         "; list the running execs");
  std::lock_guard<std::mutex> g(sl->mu);
  if (sl->gone)
    return make_error(errc::not_found, "exec " + exec_id + " in sandbox " + id + " has ended");
  if (!sl->resizer)
    return make_error(errc::invalid_argument,
                      "exec " + exec_id + " in sandbox " + id + " has no terminal to resize");
  return sl->resizer(cols, rows);
}

} // namespace sandboxd::runtime
