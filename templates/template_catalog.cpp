#include "templates/template_catalog.hpp"

#include "base/sha256.hpp"
#include "runtime/names.hpp"

#include <stdexcept>

namespace sandboxd::templates {
namespace {

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

bool same_scope(const template_state& t, events::template_scope scope, const std::string& tenant) {
  return t.scope == scope && (scope == events::template_scope::global || t.tenant == tenant);
}

std::string scope_words(events::template_scope scope) {
  return scope == events::template_scope::global ? "global template" : "template";
}

} // namespace

std::string_view to_string(template_status s) {
  switch (s) {
  case template_status::building:
    return "building";
  case template_status::ready:
    return "ready";
  case template_status::failed:
    return "failed";
  case template_status::deleted:
    return "deleted";
  }
  return "unknown";
}

void apply(catalog& c, const events::event& e) {
  const auto* te = std::get_if<events::template_event>(&e.body);
  if (e.sandbox_id != events::template_stream_key)
    return;
  if (e.sequence <= c.sequence)
    return; // a duplicate of an applied event
  if (e.sequence != c.sequence + 1)
    throw std::invalid_argument("template stream: event sequence " + std::to_string(e.sequence) +
                                " follows " + std::to_string(c.sequence) + "; the log lost events");
  c.sequence = e.sequence;
  if (te == nullptr)
    return; // a payload of a newer version on the stream: only the sequence moves
  auto& t = c.by_id[te->template_id];
  if (t.id.empty()) {
    t.id = te->template_id;
    t.name = te->name;
    t.scope = te->scope;
    t.tenant = e.tenant;
    t.principal = e.principal;
    t.created_at = e.occurred_at;
    t.first_sequence = e.sequence;
  }
  t.last_sequence = e.sequence;
  std::visit(overloaded{
               [&](const events::template_unknown&) {},
               [&](const events::template_created& x) {
                 t.created = x;
                 t.status = template_status::building;
               },
               [&](const events::template_layer_added& x) { t.layers_added.push_back(x); },
               [&](const events::template_step_started& x) {
                 t.steps.push_back({x, {}});
               },
               [&](const events::template_step_finished& x) {
                 for (auto it = t.steps.rbegin(); it != t.steps.rend(); ++it)
                   if (it->started.index == x.index && !it->finished) {
                     it->finished = x;
                     return;
                   }
                 t.steps.push_back({{x.index, "", std::nullopt}, x});
               },
               [&](const events::template_ready& x) {
                 t.ready = x;
                 t.status = template_status::ready;
                 t.settled_at = e.occurred_at;
               },
               [&](const events::template_failed& x) {
                 t.failure = x.failure;
                 t.status = template_status::failed;
                 t.settled_at = e.occurred_at;
               },
               [&](const events::template_deleted& x) {
                 t.deleted_reason = x.reason;
                 t.status = template_status::deleted;
                 t.settled_at = e.occurred_at;
               },
             },
             te->change);
}

const template_state* find(const catalog& c, const asker& who, const std::string& name) {
  const template_state* own = nullptr;
  const template_state* global = nullptr;
  for (const auto& [id, t] : c.by_id) {
    if (t.name != name || t.status == template_status::deleted)
      continue;
    // Among several (a failed one and its rebuild), the latest one counts.
    auto later = [&](const template_state* than) {
      return than == nullptr || t.first_sequence > than->first_sequence;
    };
    if (t.scope == events::template_scope::tenant && t.tenant == who.tenant && later(own))
      own = &t;
    else if (t.scope == events::template_scope::global && later(global))
      global = &t;
  }
  return own ? own : global;
}

const template_state* find_id(const catalog& c, const std::string& id) {
  auto it = c.by_id.find(id);
  return it == c.by_id.end() ? nullptr : &it->second;
}

std::vector<const template_state*> visible(const catalog& c, const asker& who) {
  std::map<std::pair<std::string, int>, const template_state*> by_name;
  for (const auto& [id, t] : c.by_id) {
    if (t.status == template_status::deleted)
      continue;
    const bool own = t.scope == events::template_scope::tenant && t.tenant == who.tenant;
    if (!own && t.scope != events::template_scope::global)
      continue;
    auto& slot = by_name[{t.name, own ? 0 : 1}];
    if (slot == nullptr || t.first_sequence > slot->first_sequence)
      slot = &t;
  }
  std::vector<const template_state*> out;
  for (const auto& [key, t] : by_name)
    out.push_back(t);
  return out;
}

result<void> may_make(const catalog& c, const asker& who, events::template_scope scope,
                      const std::string& name) {
  if (auto n = runtime::check_template_name(name); !n)
    return n.err();
  if (scope == events::template_scope::global && !who.admin)
    return make_error(errc::permission_denied,
                      "global templates are made by the operator (a token with scope admin); "
                      "make template " +
                        name + " as your own instead");
  for (const auto& [id, t] : c.by_id)
    if (t.name == name && t.live() && same_scope(t, scope, who.tenant))
      return make_error(errc::conflict, scope_words(scope) + " " + name + " is " +
                                          std::string(to_string(t.status)) + " (" + t.id +
                                          "); delete it first (sandboxctl template rm " + name +
                                          ") or choose another name");
  return {};
}

result<void> may_delete(const catalog& c, const asker& who, const template_state& t,
                        const std::vector<std::string>& used_by) {
  if (t.scope == events::template_scope::global && !who.admin)
    return make_error(errc::permission_denied, "template " + t.name +
                                                 " is global; only the operator (a token with "
                                                 "scope admin) deletes it");
  if (t.status == template_status::building)
    return make_error(errc::conflict,
                      "template " + t.name + " is being built; wait until it is ready or failed");
  if (!used_by.empty()) {
    std::string names;
    for (std::size_t i = 0; i < used_by.size() && i < 10; ++i)
      names += (i ? ", " : "") + used_by[i];
    if (used_by.size() > 10)
      names += " and " + std::to_string(used_by.size() - 10) + " more";
    return make_error(errc::conflict, "template " + t.name + " is used by " +
                                        std::to_string(used_by.size()) + " sandbox" +
                                        (used_by.size() == 1 ? "" : "es") + " (" + names +
                                        "); delete them first");
  }
  for (const auto& [id, other] : c.by_id)
    if (other.live() && other.created.parent_id == t.id)
      return make_error(errc::conflict, "template " + other.name + " is built on template " +
                                          t.name + "; delete it first");
  return {};
}

sha256_digest template_digest(const std::vector<events::template_layer>& layers,
                              const std::vector<events::env_var>& env,
                              const std::string& working_directory, const std::string& user,
                              const std::vector<std::string>& command) {
  sandboxd::sha256 h;
  h.add("sandboxd template v1\n");
  for (const auto& l : layers)
    h.add("layer " + to_hex(l.sha256) + "\n");
  for (const auto& v : env) {
    h.add("env ");
    h.add(v.name);
    h.add(std::string_view("=", 1));
    h.add(v.value);
    h.add(std::string_view("\0\n", 2));
  }
  h.add("workdir ");
  h.add(working_directory);
  h.add(std::string_view("\0\nuser ", 7));
  h.add(user);
  h.add(std::string_view("\0\n", 2));
  for (const auto& a : command) {
    h.add("cmd ");
    h.add(a);
    h.add(std::string_view("\0\n", 2));
  }
  return h.finish();
}

events::template_ref ref_of(const template_state& t) {
  events::template_ref r;
  r.id = t.id;
  if (!t.ready)
    return r;
  r.digest = t.ready->digest;
  for (const auto& l : t.ready->layers)
    r.layers.push_back(l.sha256);
  r.env = t.ready->env;
  r.working_directory = t.ready->working_directory;
  r.user = t.ready->user;
  return r;
}

std::set<std::string> held_layers(const catalog& c) {
  std::set<std::string> out;
  for (const auto& [id, t] : c.by_id) {
    if (t.status == template_status::building)
      for (const auto& l : t.layers_added)
        out.insert(to_hex(l.sha256));
    if (t.status == template_status::ready && t.ready)
      for (const auto& l : t.ready->layers)
        out.insert(to_hex(l.sha256));
  }
  return out;
}

events::event next_event(const catalog& c, const template_state& t, const std::string& tenant,
                         const std::string& principal, events::time_point now,
                         events::template_change change) {
  events::event e;
  e.sandbox_id = std::string(events::template_stream_key);
  e.sequence = c.sequence + 1;
  e.event_id = e.sandbox_id + ":" + std::to_string(e.sequence);
  e.tenant = tenant;
  e.principal = principal;
  e.occurred_at = now;
  e.correlation_id = t.id;
  e.body = events::template_event{t.id, t.name, t.scope, std::move(change)};
  return e;
}

} // namespace sandboxd::templates
