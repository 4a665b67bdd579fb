#include "actors/exec_table.hpp"

#include <algorithm>

namespace sandboxd::actors {

void exec_table::started(const events::exec_started& e) {
  running_[e.exec_id].started = e;
}

void exec_table::finished(const events::exec_finished& f, std::uint64_t sequence) {
  auto waiters = std::vector<op_done<events::exec_finished>>{};
  if (auto it = running_.find(f.exec_id); it != running_.end()) {
    waiters = std::move(it->second.waiters);
    running_.erase(it);
  }
  results_.emplace_back(f, sequence);
  if (results_.size() > k_results_kept)
    results_.pop_front();
  for (auto& w : waiters)
    w(op_result<events::exec_finished>{std::nullopt, f, sequence});
}

void exec_table::forget_except(const std::vector<std::string>& still, const events::error& why) {
  for (auto it = running_.begin(); it != running_.end();) {
    if (std::find(still.begin(), still.end(), it->first) != still.end()) {
      ++it;
      continue;
    }
    for (auto& w : it->second.waiters)
      w(op_result<events::exec_finished>{why, {}, 0});
    it = running_.erase(it);
  }
}

std::vector<events::exec_started> exec_table::in_flight() const {
  std::vector<events::exec_started> out;
  out.reserve(running_.size());
  for (const auto& [id, r] : running_)
    out.push_back(r.started);
  return out;
}

void exec_table::wait(const std::string& sandbox_id, const std::string& exec_id,
                      op_done<events::exec_finished> done) {
  if (auto it = running_.find(exec_id); it != running_.end()) {
    it->second.waiters.push_back(std::move(done));
    return;
  }
  for (auto it = results_.rbegin(); it != results_.rend(); ++it)
    if (it->first.exec_id == exec_id) {
      done(op_result<events::exec_finished>{std::nullopt, it->first, it->second});
      return;
    }
  done(op_result<events::exec_finished>{
    events::make_error(events::errc::not_found,
                       "exec " + exec_id + " of sandbox " + sandbox_id +
                         " is neither in flight nor among its recent results; list its execs"),
    {},
    0});
}

} // namespace sandboxd::actors
