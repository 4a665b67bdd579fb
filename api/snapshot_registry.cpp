#include "api/snapshot_registry.hpp"

#include <algorithm>

namespace sandboxd::api {

void snapshot_registry::add(snapshot_entry e) {
  if (deleted_.count(e.snapshot_id) || live_.count(e.snapshot_id))
    return; // deleted since, or known already
  if (auto r = reserved_.find(e.snapshot_id); r != reserved_.end())
    reserved_.erase(r); // counted since it was admitted: it only changes hands
  else
    ++counts_[e.tenant];
  auto s = sandboxes_.find(e.sandbox_id);
  if (s != sandboxes_.end())
    e.source = s->second;
  live_.emplace(e.snapshot_id, std::move(e));
}

void snapshot_registry::apply(const events::event& e) {
  std::lock_guard l(mu_);
  if (const auto* c = std::get_if<events::created>(&e.body)) {
    auto spec = *c;
    spec.env.clear(); // a fork has its own environment; nothing secret is kept here
    spec.labels.clear();
    sandboxes_[e.sandbox_id] = std::move(spec);
    tenants_[e.sandbox_id] = e.tenant;
  } else if (const auto* t = std::get_if<events::snapshot_taken>(&e.body)) {
    if (t->op_id.empty() || t->outcome != events::op_outcome::completed)
      return; // an older record (nothing behind it) or a snapshot not taken
    snapshot_entry s{t->snapshot_id,
                     e.tenant,
                     e.sandbox_id,
                     t->name,
                     e.occurred_at,
                     e.sequence,
                     t->writable_layer_bytes,
                     t->referenced_bytes,
                     t->exclusive_bytes,
                     {}};
    add(std::move(s));
  } else if (const auto* d = std::get_if<events::snapshot_deleted>(&e.body)) {
    auto it = live_.find(d->snapshot_id);
    if (it != live_.end()) {
      if (auto n = counts_.find(it->second.tenant); n != counts_.end() && n->second > 0)
        --n->second;
      live_.erase(it);
    }
    deleted_.insert(d->snapshot_id);
  }
}

void snapshot_registry::taken(const std::string& tenant, const std::string& sandbox_id,
                              const events::snapshot_taken& t, events::time_point at,
                              std::uint64_t sequence) {
  std::lock_guard l(mu_);
  add(snapshot_entry{t.snapshot_id,
                     tenant,
                     sandbox_id,
                     t.name,
                     at,
                     sequence,
                     t.writable_layer_bytes,
                     t.referenced_bytes,
                     t.exclusive_bytes,
                     {}});
}

void snapshot_registry::deleted(const std::string& snapshot_id) {
  std::lock_guard l(mu_);
  auto it = live_.find(snapshot_id);
  if (it != live_.end()) {
    if (auto n = counts_.find(it->second.tenant); n != counts_.end() && n->second > 0)
      --n->second;
    live_.erase(it);
  }
  deleted_.insert(snapshot_id);
}

result<void> snapshot_registry::reserve(const std::string& tenant, const std::string& snapshot_id,
                                        std::uint64_t quota) {
  std::lock_guard l(mu_);
  auto& n = counts_[tenant];
  if (quota != 0 && n + 1 > quota)
    return make_error(errc::resource_exhausted,
                      "tenant " + tenant + " holds " + std::to_string(n) +
                        " snapshots, its quota of " + std::to_string(quota) +
                        "; delete snapshots (sandboxctl snapshot rm) or ask for a larger quota");
  ++n;
  reserved_.emplace(snapshot_id, tenant);
  return {};
}

void snapshot_registry::release(const std::string& snapshot_id) {
  std::lock_guard l(mu_);
  auto it = reserved_.find(snapshot_id);
  if (it == reserved_.end())
    return;
  if (auto n = counts_.find(it->second); n != counts_.end() && n->second > 0)
    --n->second;
  reserved_.erase(it);
}

std::optional<snapshot_entry> snapshot_registry::get(const std::string& tenant,
                                                     const std::string& id) const {
  std::lock_guard l(mu_);
  auto it = live_.find(id);
  if (it == live_.end() || it->second.tenant != tenant)
    return std::nullopt;
  auto e = it->second;
  if (auto s = sandboxes_.find(e.sandbox_id); s != sandboxes_.end())
    e.source = s->second; // its `created` may have been folded after the snapshot
  return e;
}

std::vector<snapshot_entry> snapshot_registry::list(const std::string& tenant,
                                                    const std::string& sandbox_id) const {
  std::vector<snapshot_entry> out;
  {
    std::lock_guard l(mu_);
    for (const auto& [id, e] : live_)
      if (e.tenant == tenant && (sandbox_id.empty() || e.sandbox_id == sandbox_id))
        out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.taken_at != b.taken_at ? a.taken_at < b.taken_at : a.snapshot_id < b.snapshot_id;
  });
  return out;
}

bool snapshot_registry::knows(const std::string& id) const {
  std::lock_guard l(mu_);
  return live_.count(id) || reserved_.count(id) || deleted_.count(id);
}

std::uint64_t snapshot_registry::count(const std::string& tenant) const {
  std::lock_guard l(mu_);
  auto it = counts_.find(tenant);
  return it == counts_.end() ? 0 : it->second;
}

} // namespace sandboxd::api
