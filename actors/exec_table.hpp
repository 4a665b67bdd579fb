// exec_table.hpp — a sandbox actor's view of its execs: those in flight (as their
// exec_started events), the last results (a bounded number, newest kept), and the callers
// waiting for an exec to finish. Internal to actors/; lives on the actor's thread.
//
// Guarantees: a waiter is answered exactly once — when the exec's exec_finished is durable
// (finished()), at once when the result is still remembered, or with not_found when the exec
// is neither in flight nor remembered.
#pragma once

#include "actors/op_result.hpp"

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace sandboxd::actors {

class exec_table {
public:
  static constexpr std::size_t k_results_kept = 64;

  void started(const events::exec_started& e);
  // Durable: answers its waiters and remembers the result.
  void finished(const events::exec_finished& f, std::uint64_t sequence);
  // Execs whose processes ended without an exec_finished (a filesystem pause, a delete): their
  // waiters are answered with `why`. Keeps those named in `still`.
  void forget_except(const std::vector<std::string>& still, const events::error& why);

  std::vector<events::exec_started> in_flight() const;
  void wait(const std::string& sandbox_id, const std::string& exec_id,
            op_done<events::exec_finished> done);

private:
  struct running {
    events::exec_started started;
    std::vector<op_done<events::exec_finished>> waiters;
  };
  std::map<std::string, running> running_;
  std::deque<std::pair<events::exec_finished, std::uint64_t>> results_;
};

} // namespace sandboxd::actors
