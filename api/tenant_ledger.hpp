// tenant_ledger — what each tenant's live sandboxes hold, for its quotas: sandboxes, and the
// total of their memory, CPU, pids and disk limits (as created; a zero limit, which only an
// older log has, counts as the node's default).
//
// The truth is the log: apply() folds the `created` and `deleted` events the log follower
// reads (a sandbox counts from its `created` until its `deleted`, failed ones included, since
// they exist until deleted). The follower trails the actors by a few milliseconds, so a create
// in flight is counted from the moment the server admits it: reserve() checks the quotas
// against the folded sandboxes plus the reservations and records one for the sandbox id the
// server chose; the reservation becomes the folded sandbox when its `created` is applied, or
// is dropped by release() when the create failed or named another sandbox (a retried create).
// So at no instant can a tenant's admitted creates pass its quotas.
//
// Warm pools (docs/pools.md): a pool sandbox counts against the pool tenant from its `created`
// (no quota applies to it) and changes hands at its `claim_requested`, to the claiming tenant.
// A create served from a pool reserves as any create, under the pool sandbox's id (rename()
// moves the reservation there once the pool handed one out), so the claim is counted from the
// moment the server admits it; the claim's event then turns the reservation into the count.
//
// It also keeps each tenant's log budget (log_budget.hpp): the bytes of the records the
// follower reads, by the tenant of their event.
//
// Thread-safe (one mutex): the follower applies, the server's loop reserves and releases.
#pragma once

#include "api/log_budget.hpp"
#include "api/result.hpp"
#include "events/event.hpp"
#include "node/resource_bounds.hpp"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sandboxd::api {

// Zero: unlimited. The node's settings' own type (node/resource_bounds.hpp).
using tenant_quota = node::quota_settings;

struct tenant_usage {
  std::uint64_t sandboxes = 0;
  std::uint64_t memory_mib = 0;
  std::uint64_t cpu_millicores = 0;
  std::uint64_t pids = 0;
  std::uint64_t disk_mib = 0;
  bool operator==(const tenant_usage&) const = default;
};

class tenant_ledger {
public:
  // What a zero limit counts as (the node's defaults).
  explicit tenant_ledger(events::sandbox_limits defaults = {512, 1000, 512, 10240});

  // Folds `e`, a record of `record_bytes` bytes in the log.
  void apply(const events::event& e, std::uint64_t record_bytes = 0);

  // Admits a create of `sandbox_id` for `tenant` with `limits` under `quota`, or says which
  // quota it would pass (resource_exhausted).
  result<void> reserve(const std::string& tenant, const std::string& sandbox_id,
                       const events::sandbox_limits& limits, const tenant_quota& quota);
  // Admits one more request of `tenant` while its log budget lasts (log_budget::admit), as of
  // `now` or the newest event folded, whichever is later.
  result<void> admit_log(const std::string& tenant, const tenant_quota& quota,
                         log_budget::time_point now) const;
  std::uint64_t log_bytes_last_hour(const std::string& tenant, log_budget::time_point now) const;

  // Drops the reservation of `sandbox_id`, if it is still one.
  void release(const std::string& sandbox_id);
  // The reservation of `from` is `to`'s from now on (a create served from a warm pool: the
  // sandbox it claims). Nothing when `from` holds no reservation.
  void rename(const std::string& from, const std::string& to);

  // Folded sandboxes and reservations together.
  tenant_usage usage(const std::string& tenant) const;
  bool knows(const std::string& sandbox_id) const;

private:
  struct holding {
    std::string tenant;
    tenant_usage held; // sandboxes 1
  };
  holding holding_of(const std::string& tenant, const events::sandbox_limits& l) const;
  void add(const holding& h);
  void remove(const holding& h);

  events::sandbox_limits defaults_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, holding> live_;     // folded from the log
  std::unordered_map<std::string, holding> reserved_; // admitted, not folded yet
  std::unordered_map<std::string, tenant_usage> totals_;
  log_budget log_;
  // The newest event time folded: the budget's clock when events run ahead of the host's
  // (a node on a test clock), so that its window is never empty for a clock behind them.
  log_budget::time_point newest_{};
};

} // namespace sandboxd::api
