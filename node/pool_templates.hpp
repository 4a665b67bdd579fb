// pool_templates — how the node turns a warm pool's key into the spec its sandboxes are
// created with (actors::pool_spec_fn, docs/pools.md): the template the key names, as the
// pool tenant sees it (the global templates), held until the creates' `created` are durable.
// A stock template not built yet is built first (minutes: the control plane calls this on
// its blocking pool). A hollow pool needs no template content.
#pragma once

#include "actors/pool_settings.hpp"

#include <variant>

namespace sandboxd::templates {
class template_registry;
}

namespace sandboxd::node {

std::variant<actors::pool_spec, events::error> pool_spec_of(templates::template_registry& registry,
                                                            const actors::pool_key& key);

} // namespace sandboxd::node
