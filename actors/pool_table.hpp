// pool_table.hpp — one warm pool's bookkeeping as a pure value: which sandboxes are ready,
// how many are being made, and what the pool should do next. The pool actor
// (pool_actor.cpp) tells it what happened and does what it says; nothing here reads a clock
// or does I/O (docs/pools.md).
//
// Guarantees:
// - A ready sandbox is handed out at most once: take() removes it before its id leaves the
//   table, and only give_back() (its claim was never sent) makes it ready again. Nothing
//   else ever adds a sandbox that was taken.
// - The pool aims at target() ready sandboxes: `size`, plus the claims of the last demand
//   window (a burst grows it), never above `maximum`; ready and being made together never
//   pass `maximum`.
// - Creates start at most `refill_per_second` (a token bucket holding one second's worth,
//   at least one create).
// - After a hit, creates wait k_claim_quiet while the pool still holds a ready sandbox (with
//   none ready, the next claim would be a miss: they start at once).
// - Ready sandboxes beyond the target (demand fell, or the settings shrank) are retired,
//   oldest first; so are ready sandboxes of template content other than the content the
//   pool's template stands for now (set_content: the template was rebuilt). A claim that asks
//   for other content (a tenant's own template of the same name) is a miss and retires
//   nothing.
#pragma once

#include "actors/pool_settings.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::actors {

// Claims counted as demand: those of the last k_demand_window.
inline constexpr std::chrono::seconds k_demand_window{10};
// After a hit, creates wait this long while a sandbox is still ready: the claimed sandbox's
// first exec (its caller's next call, milliseconds later) then does not share the CPU with
// the runtime's create and start of its replacement (docs/performance.md, "Warm pools").
// Later hits do not extend a wait, so no create waits longer than this.
inline constexpr std::chrono::milliseconds k_claim_quiet{100};

// What a pool reports (sandboxctl pool list, metrics).
struct pool_figures {
  std::string key; // to_string(settings.key)
  pool_settings settings;
  std::uint32_t ready = 0;
  std::uint32_t making = 0; // creates started and not ended
  std::uint32_t target = 0;
  std::uint64_t hits = 0;        // takes that found a ready sandbox
  std::uint64_t misses = 0;      // takes that found none (the create went cold)
  std::uint64_t made = 0;        // creates that ended running
  std::uint64_t failed = 0;      // creates that did not
  std::uint64_t retired = 0;     // ready sandboxes deleted unclaimed
  std::uint32_t deleting = 0;    // of those, deletes not settled yet (the pool actor counts them)
  double refill_seconds_sum = 0; // of the creates made: from start to running
  double refill_seconds_max = 0;
  std::vector<std::string> ready_ids; // oldest first
  std::string last_error;             // of the last create (or template lookup) that failed
};

class pool_table {
public:
  pool_table(pool_settings settings, events::time_point now);

  const pool_settings& settings() const { return s_; }
  void reconfigure(pool_settings settings);

  // The oldest ready sandbox made of template content `content_id`, or nullopt: a miss.
  // Either way the claim counts as demand.
  std::optional<std::string> take(const std::string& content_id, events::time_point now);
  // The pool's template stands for `content_id` now (its lookup before a refill): ready
  // sandboxes of other content, and those of other content made later (creates started
  // before the rebuild), are retired by the next plan.
  void set_content(const std::string& content_id);
  // `id` was taken and its claim never sent (the tenant's quota refused it): ready again,
  // first in line.
  void give_back(std::string id, std::string content_id);
  // A running pool sandbox the pool did not start (found at recovery): ready.
  void adopt(std::string id, std::string content_id);
  // A create the pool started ended: running after `took`, or not (`why`).
  void made(std::string id, std::string content_id, events::nanoseconds took);
  void not_made(std::string why);
  // Creates the pool never started after all (its template could not be looked up).
  void cancel(std::uint32_t creates, std::string why);

  struct plan {
    std::uint32_t create = 0;               // start these now (counted as being made)
    std::vector<std::string> retire;        // delete these (no longer ready)
    std::optional<events::time_point> wake; // look again then (a token, or demand falling)
  };
  // `may_create` false: no create is planned now (the template lookup is backing off).
  plan next(events::time_point now, bool may_create = true);

  std::uint32_t target(events::time_point now) const;
  pool_figures figures(events::time_point now) const;

private:
  struct ready_sandbox {
    std::string id;
    std::string content_id;
  };
  void refill_tokens(events::time_point now);
  void forget_old_claims(events::time_point now);

  pool_settings s_;
  std::deque<ready_sandbox> ready_;    // oldest first
  std::vector<std::string> stale_;     // ready ones of content no claim asks for: to retire
  std::optional<std::string> content_; // what the template stands for (set_content), if known
  std::uint32_t making_ = 0;
  double tokens_ = 1;
  events::time_point tokens_at_;
  std::deque<events::time_point> claims_; // in the demand window, oldest first
  events::time_point quiet_until_{};      // creates wait until then (k_claim_quiet)
  pool_figures counts_;                   // the counters and last_error
};

} // namespace sandboxd::actors
