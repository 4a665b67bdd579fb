// projection_memory — what a projector remembers of its read models between its own
// consecutive steps, so that a step need not read it back from PostgreSQL.
//
// Per sandbox: the duplicate guard (the highest sequence applied, whether a `sandboxes` row
// and a projection_sandbox_seq row exist), the billing meter state (empty: no
// billing_meter_state row) and the latest hour that has a billing_hourly row. Knowing which
// rows exist lets a step insert or update them without an upsert's conflict check (a wrong
// belief would show as a unique violation, a fault: the step is retried after forgetting). Per
// audit chain (tenant, partition): its head. An entry is what PostgreSQL holds after the step that
// wrote it committed; a sandbox or chain without an entry is read from PostgreSQL as before.
//
// Trust. The memory is only valid for the offsets it was vouched at: the projector vouches
// after its commit with the offsets it committed, and before applying the next step
// compares them with the offsets it locked. Any commit by another projector moves some
// offset forward, and every sandbox and chain belongs to one partition (log key: the
// sandbox id), so equal offsets mean nobody else changed these rows. While a step applies,
// the memory is distrusted; a step that fails (a fault, an uncertain commit) leaves it
// distrusted, and the next step forgets it and reads again.
#pragma once

#include "projections/billing_meter.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace sandboxd::projections {

struct sandbox_memory {
  std::uint64_t last_seq = 0; // the highest sequence applied; 0: none
  bool has_row = false;       // a `sandboxes` row exists
  bool has_guard_row = false; // a projection_sandbox_seq row exists
  std::optional<meter_state> meter;
  std::optional<std::int64_t> last_hour; // the latest hour_ms with a billing_hourly row
};

struct chain_head {
  std::int64_t position = 0; // 0: the chain has no row yet
  std::string hash;
};

class projection_memory {
public:
  using offsets = std::map<std::int32_t, std::int64_t>;
  using chain_key = std::pair<std::string, std::int32_t>; // tenant, partition

  // More sandboxes than this and the memory is forgotten rather than grown (bounded memory;
  // the next step reads what it needs again).
  static constexpr std::size_t max_sandboxes = 250'000;

  // Whether the entries describe PostgreSQL when its locked offsets are `at`.
  bool trusted_at(const offsets& at) const { return vouched_ && *vouched_ == at; }
  void vouch(offsets at) { vouched_ = std::move(at); }
  void distrust() { vouched_.reset(); }
  // Drops every entry (and the trust).
  void forget();
  // forget() unless trusted at `at` and within max_sandboxes.
  void check(const offsets& at);

  std::unordered_map<std::string, sandbox_memory> sandboxes;
  std::map<chain_key, chain_head> heads;

private:
  std::optional<offsets> vouched_;
};

} // namespace sandboxd::projections
