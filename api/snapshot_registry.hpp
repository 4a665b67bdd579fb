// snapshot_registry — the node's snapshots as the log says they are (docs/snapshots.md), for
// the API's list, get, delete and fork calls and the tenant's snapshot quota.
//
// The truth is the log: apply() folds what the log follower reads — a sandbox's `created`
// (its tenant, runtime and template, which a fork of its snapshots takes), each completed
// `snapshot_taken` (the snapshot exists from then) and `snapshot_deleted` (it no longer does).
// The follower trails the actors by a few milliseconds, so the API also records a snapshot it
// took (taken()) and one it deleted (deleted()) at once; folding the same events later changes
// nothing (a deleted id is remembered, so a late `snapshot_taken` does not bring it back).
// Snapshots in flight are reserved against the tenant's quota (reserve/release), as
// tenant_ledger does for creates: at no instant can a tenant's admitted snapshots pass it.
//
// Tenancy: every lookup takes the caller's tenant; another tenant's snapshot is the same
// "does not exist" as a missing one.
//
// Thread-safe (one mutex).
#pragma once

#include "api/result.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace sandboxd::api {

struct snapshot_entry {
  std::string snapshot_id;
  std::string tenant;
  std::string sandbox_id; // the sandbox it was taken of (which may be deleted since)
  std::string name;
  events::time_point taken_at{};
  std::uint64_t sequence = 0;    // of its snapshot_taken in the sandbox's stream
  std::uint64_t layer_bytes = 0; // the sandbox's layer at the time (referenced)
  std::uint64_t referenced_bytes = 0;
  std::uint64_t exclusive_bytes = 0;
  events::created source; // the sandbox's `created`: runtime, template, limits of a fork
};

class snapshot_registry {
public:
  void apply(const events::event& e);
  // The API took (or deleted) a snapshot whose event is durable: known at once.
  void taken(const std::string& tenant, const std::string& sandbox_id,
             const events::snapshot_taken& t, events::time_point at, std::uint64_t sequence);
  void deleted(const std::string& snapshot_id);

  // Admits one more snapshot `snapshot_id` of `tenant` under `quota` snapshots (0: no limit),
  // or resource_exhausted naming the quota.
  result<void> reserve(const std::string& tenant, const std::string& snapshot_id,
                       std::uint64_t quota);
  void release(const std::string& snapshot_id);

  // The tenant's snapshot, or nullopt (missing, deleted or another tenant's).
  std::optional<snapshot_entry> get(const std::string& tenant, const std::string& id) const;
  // The tenant's snapshots, oldest first; with `sandbox_id`, only that sandbox's.
  std::vector<snapshot_entry> list(const std::string& tenant,
                                   const std::string& sandbox_id = {}) const;
  // Whether the id is known in any way (live, reserved or deleted): a new id must not be.
  bool knows(const std::string& id) const;
  std::uint64_t count(const std::string& tenant) const;

private:
  void add(snapshot_entry e);

  mutable std::mutex mu_;
  std::unordered_map<std::string, events::created> sandboxes_; // by sandbox id
  std::unordered_map<std::string, std::string> tenants_;       // sandbox id -> tenant
  std::unordered_map<std::string, snapshot_entry> live_;
  std::unordered_map<std::string, std::string> reserved_; // snapshot id -> tenant
  std::unordered_set<std::string> deleted_;
  std::unordered_map<std::string, std::uint64_t> counts_; // live + reserved, by tenant
};

} // namespace sandboxd::api
