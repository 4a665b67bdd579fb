#include "api/log_follower.hpp"

#include <pthread.h>

#include <iostream>

namespace sandboxd::api {
namespace {
constexpr std::size_t k_batch = 2048;
}

log_follower::log_follower(events::event_log& log, tenant_ledger& ledger,
                           std::function<void(std::int32_t, std::int64_t)> advanced,
                           std::chrono::milliseconds idle_wait)
    : log_(log), ledger_(ledger), advanced_(std::move(advanced)), idle_wait_(idle_wait),
      next_(static_cast<std::size_t>(log.partitions())) {}

log_follower::~log_follower() {
  stop();
}

std::size_t log_follower::read_some(std::int32_t partition) {
  auto& next = next_[static_cast<std::size_t>(partition)];
  auto r = log_.read(partition, next.load(), k_batch);
  if (!r.ok() || r.records.empty())
    return 0;
  for (const auto& rec : r.records) {
    auto d = events::decode(rec.value);
    if (!d.ok()) {
      std::cerr << "sandboxd: rpc: skipping the record at partition " << rec.partition << " offset "
                << rec.offset << " for quotas: " << d.failure().message << "\n";
      continue;
    }
    const auto& e = d.get();
    ledger_.apply(e, rec.value.size());
    if (snapshots_)
      snapshots_->apply(e);
    if (std::holds_alternative<events::created>(e.body)) {
      std::lock_guard l(mu_);
      first_.emplace(e.sandbox_id, rec.offset);
    } else if (std::holds_alternative<events::deleted>(e.body)) {
      std::lock_guard l(mu_);
      first_.erase(e.sandbox_id);
    }
  }
  next.store(r.records.back().offset + 1);
  if (advanced_)
    advanced_(partition, next.load());
  return r.records.size();
}

void log_follower::catch_up() {
  for (std::int32_t p = 0; p < log_.partitions(); ++p) {
    auto end = log_.end_offset(p);
    if (!end.ok())
      throw events::log_fault("cannot read the end of partition " + std::to_string(p) + " of " +
                              log_.describe() + ": " + end.failure->message);
    while (next_[static_cast<std::size_t>(p)].load() < end.offset)
      if (read_some(p) == 0)
        break;
  }
}

void log_follower::start() {
  if (!thread_.joinable())
    thread_ = std::thread([this] { run(); });
}

void log_follower::stop() {
  stopping_ = true;
  if (thread_.joinable())
    thread_.join();
}

void log_follower::run() {
  ::pthread_setname_np(::pthread_self(), "sbd-rpc-follow");
  std::size_t cursor = 0;
  const auto parts = static_cast<std::size_t>(log_.partitions());
  while (!stopping_) {
    std::size_t moved = 0;
    try {
      for (std::int32_t p = 0; p < log_.partitions(); ++p)
        moved += read_some(p);
      if (moved == 0) {
        const auto p = static_cast<std::int32_t>(cursor++ % parts);
        log_.wait_for(p, next_[static_cast<std::size_t>(p)].load(), idle_wait_);
      }
    } catch (const std::exception& e) {
      std::cerr << "sandboxd: rpc: reading the log for quotas and streams failed: " << e.what()
                << "; retrying\n";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

std::optional<std::int64_t> log_follower::first_offset(const std::string& sandbox_id) const {
  std::lock_guard l(mu_);
  auto it = first_.find(sandbox_id);
  if (it == first_.end())
    return std::nullopt;
  return it->second;
}

std::int64_t log_follower::position(std::int32_t partition) const {
  return next_[static_cast<std::size_t>(partition)].load();
}

} // namespace sandboxd::api
