#include "api/tenant_ledger.hpp"

#include <algorithm>

namespace sandboxd::api {

tenant_ledger::tenant_ledger(events::sandbox_limits defaults) : defaults_(defaults) {}

tenant_ledger::holding tenant_ledger::holding_of(const std::string& tenant,
                                                 const events::sandbox_limits& l) const {
  holding h{tenant, {}};
  h.held.sandboxes = 1;
  const auto or_default = [](std::uint32_t v, std::uint32_t d) { return v ? v : d; };
  h.held.memory_mib = or_default(l.memory_mib, defaults_.memory_mib);
  h.held.cpu_millicores = or_default(l.cpu_millicores, defaults_.cpu_millicores);
  h.held.pids = or_default(l.pids, defaults_.pids);
  h.held.disk_mib = or_default(l.disk_mib, defaults_.disk_mib);
  return h;
}

void tenant_ledger::add(const holding& h) {
  auto& t = totals_[h.tenant];
  t.sandboxes += h.held.sandboxes;
  t.memory_mib += h.held.memory_mib;
  t.cpu_millicores += h.held.cpu_millicores;
  t.pids += h.held.pids;
  t.disk_mib += h.held.disk_mib;
}

void tenant_ledger::remove(const holding& h) {
  auto it = totals_.find(h.tenant);
  if (it == totals_.end())
    return;
  auto& t = it->second;
  t.sandboxes -= h.held.sandboxes;
  t.memory_mib -= h.held.memory_mib;
  t.cpu_millicores -= h.held.cpu_millicores;
  t.pids -= h.held.pids;
  t.disk_mib -= h.held.disk_mib;
  if (t.sandboxes == 0)
    totals_.erase(it);
}

void tenant_ledger::apply(const events::event& e, std::uint64_t record_bytes) {
  std::lock_guard l(mu_);
  if (record_bytes > 0 && !e.tenant.empty()) {
    log_.spend(e.tenant, record_bytes, e.occurred_at);
    newest_ = std::max(newest_, log_budget::time_point(e.occurred_at));
  }
  if (auto* c = std::get_if<events::created>(&e.body)) {
    if (live_.count(e.sandbox_id))
      return; // a duplicate record
    auto r = reserved_.find(e.sandbox_id);
    if (r != reserved_.end()) {
      // Counted since it was admitted: it only changes hands.
      live_.emplace(e.sandbox_id, std::move(r->second));
      reserved_.erase(r);
      return;
    }
    auto h = holding_of(e.tenant, c->limits);
    add(h);
    live_.emplace(e.sandbox_id, std::move(h));
  } else if (std::holds_alternative<events::claim_requested>(e.body)) {
    auto it = live_.find(e.sandbox_id);
    if (it == live_.end() || it->second.tenant == e.tenant)
      return; // not folded (a log read from later on), or a duplicate record
    remove(it->second);
    if (auto r = reserved_.find(e.sandbox_id); r != reserved_.end()) {
      it->second = std::move(r->second); // counted since it was admitted
      reserved_.erase(r);
    } else {
      it->second.tenant = e.tenant;
      add(it->second);
    }
  } else if (std::holds_alternative<events::deleted>(e.body)) {
    auto it = live_.find(e.sandbox_id);
    if (it == live_.end())
      return;
    remove(it->second);
    live_.erase(it);
  }
}

result<void> tenant_ledger::reserve(const std::string& tenant, const std::string& sandbox_id,
                                    const events::sandbox_limits& limits,
                                    const tenant_quota& quota) {
  std::lock_guard l(mu_);
  auto h = holding_of(tenant, limits);
  tenant_usage now;
  if (auto it = totals_.find(tenant); it != totals_.end())
    now = it->second;
  const auto over = [&](const char* what, std::uint64_t used, std::uint64_t more,
                        std::uint64_t limit, const char* unit) -> std::optional<error> {
    if (limit == 0 || used + more <= limit)
      return std::nullopt;
    return make_error(errc::resource_exhausted,
                      "tenant " + tenant + " would pass its " + what + " quota (" +
                        std::to_string(used) + unit + " in use, " + std::to_string(more) + unit +
                        " more asked, quota " + std::to_string(limit) + unit +
                        "); delete sandboxes, ask for less or ask for a larger quota");
  };
  if (auto e = over("sandbox", now.sandboxes, 1, quota.sandboxes, ""))
    return *e;
  if (auto e = over("memory", now.memory_mib, h.held.memory_mib, quota.memory_mib, " MiB"))
    return *e;
  if (auto e =
        over("CPU", now.cpu_millicores, h.held.cpu_millicores, quota.cpu_millicores, " millicores"))
    return *e;
  if (auto e = over("pids", now.pids, h.held.pids, quota.pids, " pids"))
    return *e;
  if (auto e = over("disk", now.disk_mib, h.held.disk_mib, quota.disk_mib, " MiB"))
    return *e;
  add(h);
  reserved_.emplace(sandbox_id, std::move(h));
  return {};
}

result<void> tenant_ledger::admit_log(const std::string& tenant, const tenant_quota& quota,
                                      log_budget::time_point now) const {
  std::lock_guard l(mu_);
  return log_.admit(tenant, quota.log_mib_per_hour, std::max(now, newest_));
}

std::uint64_t tenant_ledger::log_bytes_last_hour(const std::string& tenant,
                                                 log_budget::time_point now) const {
  std::lock_guard l(mu_);
  return log_.used(tenant, std::max(now, newest_));
}

void tenant_ledger::release(const std::string& sandbox_id) {
  std::lock_guard l(mu_);
  auto it = reserved_.find(sandbox_id);
  if (it == reserved_.end())
    return;
  remove(it->second);
  reserved_.erase(it);
}

void tenant_ledger::rename(const std::string& from, const std::string& to) {
  std::lock_guard l(mu_);
  auto it = reserved_.find(from);
  if (it == reserved_.end())
    return;
  auto h = std::move(it->second);
  reserved_.erase(it);
  reserved_.insert_or_assign(to, std::move(h));
}

tenant_usage tenant_ledger::usage(const std::string& tenant) const {
  std::lock_guard l(mu_);
  auto it = totals_.find(tenant);
  return it == totals_.end() ? tenant_usage{} : it->second;
}

bool tenant_ledger::knows(const std::string& sandbox_id) const {
  std::lock_guard l(mu_);
  return live_.count(sandbox_id) || reserved_.count(sandbox_id);
}

} // namespace sandboxd::api
