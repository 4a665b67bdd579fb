// template_quota — a tenant's own templates against its quota (docs/templates.md, "Quotas"):
// how many it holds and the bytes their layers take, and whether it may make one more. Pure:
// the registry (template_registry.hpp) asks before it logs anything of a new template, and
// bounds what an import may unpack by what is left.
//
// What counts: the tenant's live templates of its own scope (building or ready; a failed or
// deleted one holds no layer). A ready template's bytes are its `ready` event's total (each
// layer as stored); a building one's, the layers added so far. Global templates are the
// operator's and count against no tenant.
#pragma once

#include "base/result.hpp"
#include "templates/template_catalog.hpp"

#include <cstdint>
#include <string>

namespace sandboxd::templates {

// 0: no limit.
struct template_quota {
  std::uint64_t templates = 0;
  std::uint64_t bytes = 0;
};

struct template_usage {
  std::uint64_t templates = 0;
  std::uint64_t bytes = 0;
};

// The bytes template `t` holds in the store as the quota counts them.
std::uint64_t template_bytes(const template_state& t);

template_usage usage_of(const catalog& c, const std::string& tenant);

// Whether `tenant` may start one more template of its own: resource_exhausted naming the
// quota, what the tenant holds and what to do, when it holds `q.templates` templates already
// or its templates take `q.bytes` or more.
result<void> may_add(const catalog& c, const std::string& tenant, const template_quota& q);

// The bytes a new template of `tenant` may still unpack before the bytes quota is reached
// (UINT64_MAX when there is no bytes quota).
std::uint64_t bytes_left(const catalog& c, const std::string& tenant, const template_quota& q);

// The error of an import that went past the bytes quota while it unpacked (resource_exhausted).
error over_bytes_quota(const std::string& name, const template_quota& q, std::uint64_t held);

} // namespace sandboxd::templates
