#include "templates/template_quota.hpp"

#include <limits>

namespace sandboxd::templates {
namespace {

std::string mib(std::uint64_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

} // namespace

std::uint64_t template_bytes(const template_state& t) {
  if (t.ready)
    return t.ready->billable_bytes();
  std::uint64_t sum = 0;
  for (const auto& l : t.layers_added)
    sum += l.bytes;
  return sum;
}

template_usage usage_of(const catalog& c, const std::string& tenant) {
  template_usage u;
  for (const auto& [id, t] : c.by_id)
    if (t.scope == events::template_scope::tenant && t.tenant == tenant && t.live()) {
      ++u.templates;
      u.bytes += template_bytes(t);
    }
  return u;
}

result<void> may_add(const catalog& c, const std::string& tenant, const template_quota& q) {
  const auto u = usage_of(c, tenant);
  if (q.templates != 0 && u.templates >= q.templates)
    return make_error(errc::resource_exhausted,
                      "tenant " + tenant + " has " + std::to_string(u.templates) +
                        " templates of its own, its template quota (quota-templates " +
                        std::to_string(q.templates) +
                        "); delete one (sandboxctl template rm NAME) or ask the operator "
                        "for a larger quota");
  if (q.bytes != 0 && u.bytes >= q.bytes)
    return make_error(errc::resource_exhausted,
                      "tenant " + tenant + "'s templates hold " + mib(u.bytes) +
                        ", its template bytes quota (quota-template-mib " +
                        std::to_string(q.bytes >> 20) +
                        "); delete a template (sandboxctl template rm NAME) or ask the "
                        "operator for a larger quota");
  return {};
}

std::uint64_t bytes_left(const catalog& c, const std::string& tenant, const template_quota& q) {
  if (q.bytes == 0)
    return std::numeric_limits<std::uint64_t>::max();
  const auto held = usage_of(c, tenant).bytes;
  return held >= q.bytes ? 0 : q.bytes - held;
}

error over_bytes_quota(const std::string& name, const template_quota& q, std::uint64_t held) {
  return make_error(errc::resource_exhausted,
                    "template " + name +
                      " would take the tenant's templates past its template "
                      "bytes quota (quota-template-mib " +
                      std::to_string(q.bytes >> 20) + "; its other templates hold " + mib(held) +
                      "); delete a template (sandboxctl template rm NAME), import a smaller "
                      "archive or ask the operator for a larger quota");
}

} // namespace sandboxd::templates
