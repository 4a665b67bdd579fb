// template_catalog — the pure core of templates: the fold of the template stream (every
// template event, in order) and the rules that decide on it. No I/O, no clock, no locks:
// template_registry.hpp is the thin shell that appends events and runs builds.
//
// Lifecycle of one template (docs/templates.md): created -> (layer_added | step_started |
// step_finished)* -> ready | failed; then deleted, from any state. A template's content
// (its layers and config, named by its digest) is fixed once it is ready.
//
// Names and tenancy:
// - A name is [a-z0-9_-]{1,64}. Among the templates of one scope (global, or one tenant's
//   own) that are building or ready, a name is unique; a failed one keeps its name until
//   it is deleted or built again.
// - A tenant sees and uses the global templates and its own, and nothing else: another
//   tenant's template is not_found, exactly like a name that was never used. Its own name
//   shadows a global one for it alone.
// - Only an admin makes, replaces or deletes global templates.
// - A template is deleted only while no sandbox uses it (conflict naming the sandboxes)
//   and no template is built on it.
#pragma once

#include "base/result.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sandboxd::templates {

enum class template_status : std::uint8_t { building, ready, failed, deleted };
std::string_view to_string(template_status s);

struct step_record {
  events::template_step_started started;
  std::optional<events::template_step_finished> finished;
  bool operator==(const step_record&) const = default;
};

struct template_state {
  std::string id;
  std::string name;
  events::template_scope scope = events::template_scope::global;
  std::string tenant; // tenant scope: the owner; global: the tenant of whoever made it
  std::string principal;
  events::template_created created;
  template_status status = template_status::building;
  std::vector<events::template_layer_added> layers_added;
  std::vector<step_record> steps;
  std::optional<events::template_ready> ready;
  std::optional<events::error> failure;
  std::string deleted_reason;
  events::time_point created_at{}, settled_at{}; // settled: ready, failed or deleted
  std::uint64_t first_sequence = 0, last_sequence = 0;
  bool operator==(const template_state&) const = default;

  bool live() const {
    return status == template_status::building || status == template_status::ready;
  }
};

// Who asks: a tenant, and whether it holds the admin scope.
struct asker {
  std::string tenant;
  std::string principal;
  bool admin = false;
};

struct catalog {
  std::uint64_t sequence = 0;                  // of the last template event applied
  std::map<std::string, template_state> by_id; // every template ever made, deleted included
  bool operator==(const catalog&) const = default;
};

// Applies one event of the template stream. One at or below `sequence` is a duplicate (a
// retried append) and changes nothing; a gap throws std::invalid_argument (the log lost
// events). Events that are not template events are ignored.
void apply(catalog& c, const events::event& e);

// The template `name` as `who` sees it: its own live (or failed) one first, then the
// global one; deleted ones never. nullptr when there is none.
const template_state* find(const catalog& c, const asker& who, const std::string& name);
const template_state* find_id(const catalog& c, const std::string& id);
// Every template `who` sees (its own and the global ones, deleted ones left out), by name.
std::vector<const template_state*> visible(const catalog& c, const asker& who);

// Whether `who` may make a template `name` in `scope` now: invalid_argument for a bad
// name, permission_denied for a global one without admin, conflict while one of that name
// is building or ready in the scope (naming it and what to do).
result<void> may_make(const catalog& c, const asker& who, events::template_scope scope,
                      const std::string& name);
// Whether `who` may delete `t` given the live sandboxes that use it: permission_denied for
// a global one without admin; conflict while building, while sandboxes use it (naming up to
// ten) or another live template is built on it.
result<void> may_delete(const catalog& c, const asker& who, const template_state& t,
                        const std::vector<std::string>& used_by);

// The digest of a template's content (docs/templates.md "Template digest"): SHA-256 over
// "sandboxd template v1\n", each layer's digest in hex (lowest first) on its own line, then
// the config as lines: env NAME=VALUE (in order), workdir, user, cmd arguments.
sha256_digest template_digest(const std::vector<events::template_layer>& layers,
                              const std::vector<events::env_var>& env,
                              const std::string& working_directory, const std::string& user,
                              const std::vector<std::string>& command);

// What a sandbox of the ready template `t` records in its `created` event.
events::template_ref ref_of(const template_state& t);

// The layer digests (hex) that live templates hold: building ones (the layers added so far)
// and ready ones. Everything else in the layer store may be collected.
std::set<std::string> held_layers(const catalog& c);

// The next event of the stream, for template `t` (id, name, scope), with the envelope's
// sequence following `c`'s and the given tenant, principal and time.
events::event next_event(const catalog& c, const template_state& t, const std::string& tenant,
                         const std::string& principal, events::time_point now,
                         events::template_change change);

} // namespace sandboxd::templates
