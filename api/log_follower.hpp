// log_follower — one thread that reads every partition of the event log as it grows, for
// the RPC server: it folds each event into the tenant ledger (quotas), remembers where each
// live sandbox's history starts (the offset of its `created`, where a watch begins reading),
// and reports how far it has read each partition (the wake-up of streams waiting for new
// records).
//
// catch_up() reads up to the end offsets as of the call, on the caller's thread: the server
// calls it before it takes calls, so the ledger holds every sandbox of the log. start() then
// follows on a thread of its own; it sleeps in event_log::wait_for (at most `idle_wait` per
// partition in turn) when nothing is new. A record that does not decode is skipped with a
// warning: quotas must not stop the node (the projector is what refuses to skip).
#pragma once

#include "api/snapshot_registry.hpp"
#include "api/tenant_ledger.hpp"
#include "events/event_log.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sandboxd::api {

class log_follower {
public:
  // `advanced(partition, next_offset)` runs on the follower's thread after each read that
  // moved a partition; it must not block.
  log_follower(events::event_log& log, tenant_ledger& ledger,
               std::function<void(std::int32_t, std::int64_t)> advanced,
               std::chrono::milliseconds idle_wait = std::chrono::milliseconds(10));
  ~log_follower();
  log_follower(const log_follower&) = delete;
  log_follower& operator=(const log_follower&) = delete;

  // Folds every event read into `r` too (before catch_up or start).
  void follow_snapshots(snapshot_registry& r) { snapshots_ = &r; }

  void catch_up();
  void start();
  void stop();

  // The offset of the sandbox's `created` in its partition, once read (live sandboxes only).
  std::optional<std::int64_t> first_offset(const std::string& sandbox_id) const;
  // The next offset the follower will read in `partition`.
  std::int64_t position(std::int32_t partition) const;

private:
  // Reads one batch of `partition`; returns how many records it consumed. Throws log_fault.
  std::size_t read_some(std::int32_t partition);
  void run();

  events::event_log& log_;
  tenant_ledger& ledger_;
  snapshot_registry* snapshots_ = nullptr;
  std::function<void(std::int32_t, std::int64_t)> advanced_;
  std::chrono::milliseconds idle_wait_;
  std::vector<std::atomic<std::int64_t>> next_;
  mutable std::mutex mu_; // guards first_
  std::unordered_map<std::string, std::int64_t> first_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

} // namespace sandboxd::api
