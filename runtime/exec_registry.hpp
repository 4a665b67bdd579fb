// exec_registry — the execs running in a driver's sandboxes, by sandbox id and exec id,
// so that signal_exec can reach one while exec() waits for it.
//
// An exec registers a signaller for as long as it runs (the returned `entry` object);
// signal() calls it, holding the entry's own lock, so the exec's unregistering (the
// entry's destruction) waits for a signal in progress and a signaller never runs after
// its exec has returned. An empty exec id is not registered.
//
// A signal can arrive before its exec registered: the node answers a start once the exec's
// exec_started is durable, and the driver's exec begins on another thread after that. A
// signal for an id that neither runs nor ended recently therefore waits (up to
// `k_start_wait`) for it to start; one for an exec that ended is not_found at once.
#pragma once

#include "runtime/errc.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace sandboxd::runtime {

class exec_registry {
  struct slot {
    std::mutex mu;
    bool gone = false;
    std::function<outcome<void>(int signal)> signaller;
    std::function<outcome<void>(std::uint16_t cols, std::uint16_t rows)> resizer;
  };

public:
  using signaller = std::function<outcome<void>(int signal)>;
  using resizer = std::function<outcome<void>(std::uint16_t cols, std::uint16_t rows)>;

  class entry {
  public:
    entry() = default;
    entry(exec_registry* r, std::string key, std::shared_ptr<slot> s)
        : registry_(r), key_(std::move(key)), slot_(std::move(s)) {}
    entry(entry&& o) noexcept = default;
    entry& operator=(entry&&) = delete;
    ~entry();

  private:
    exec_registry* registry_ = nullptr;
    std::string key_;
    std::shared_ptr<slot> slot_;
  };

  // conflict when the sandbox already runs an exec with this id.
  // `r`: how a terminal exec's window changes size (empty: it has no terminal).
  outcome<entry> add(const std::string& id, const std::string& exec_id, signaller s,
                     resizer r = {});
  // not_found when no such exec runs; signal 0 only checks that it does.
  outcome<void> signal(const std::string& id, const std::string& exec_id, int signal);
  // not_found as signal; invalid_argument for an exec without a terminal.
  outcome<void> resize(const std::string& id, const std::string& exec_id, std::uint16_t cols,
                       std::uint16_t rows);

  static constexpr std::chrono::milliseconds k_start_wait{2000};
  static constexpr std::size_t k_ended_kept = 4096;

private:
  static std::string key(const std::string& id, const std::string& exec_id) {
    return id + '\0' + exec_id;
  }

  std::mutex mu_;
  std::condition_variable added_;
  std::map<std::string, std::shared_ptr<slot>> running_;
  std::set<std::string> ended_; // the last k_ended_kept execs that ended
  std::deque<std::string> ended_order_;
};

} // namespace sandboxd::runtime
