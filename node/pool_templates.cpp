// pool_templates.cpp — a pool's key through the template registry (pool_templates.hpp).
#include "node/pool_templates.hpp"

#include "templates/template_registry.hpp"

namespace sandboxd::node {

std::variant<actors::pool_spec, events::error> pool_spec_of(templates::template_registry& registry,
                                                            const actors::pool_key& key) {
  actors::pool_spec p;
  p.spec.template_name = key.template_name;
  p.spec.runtime = key.runtime;
  p.spec.limits = key.limits;
  if (key.runtime == events::runtime_kind::hollow)
    return p; // no files, no template content (as a hollow create)
  const templates::asker pool{std::string(events::k_pool_tenant), "pool", true};
  auto held = registry.acquire(pool, key.template_name, {});
  if (!held)
    return held.err();
  p.spec.content = held.value()->ref();
  p.hold = std::move(held).value();
  return p;
}

} // namespace sandboxd::node
