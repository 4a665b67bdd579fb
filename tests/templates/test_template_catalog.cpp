// The pure core of templates (templates/template_catalog.hpp): the fold of the template
// stream, tenancy (a tenant sees the global templates and its own, nothing else), the rules
// for making and deleting, the template digest, and the layers live templates hold.
#define BOOST_TEST_MODULE template_catalog
#include <boost/test/unit_test.hpp>

#include "templates/template_catalog.hpp"

using namespace sandboxd;
using namespace sandboxd::templates;
namespace ev = sandboxd::events;

namespace sandboxd::templates {
// Boost.Test prints a status it compares.
inline std::ostream& boost_test_print_type(std::ostream& o, template_status s) {
  return o << to_string(s);
}
} // namespace sandboxd::templates

namespace {

sha256_digest digest_of(std::uint8_t seed) {
  sha256_digest d{};
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = static_cast<std::uint8_t>(seed + i);
  return d;
}

// Writes template events the way the registry does: next_event, then apply.
struct stream {
  catalog c;
  ev::time_point at{ev::nanoseconds(1'000'000'000)};

  template_state make(const std::string& id, const std::string& name, ev::template_scope scope,
                      const std::string& tenant, std::vector<std::uint8_t> layers,
                      const std::string& parent = "") {
    template_state t;
    t.id = id;
    t.name = name;
    t.scope = scope;
    ev::template_created cr;
    cr.source = ev::template_source::import_archive;
    cr.parent_id = parent;
    emit(t, tenant, cr);
    ev::template_ready ready;
    for (std::uint32_t i = 0; i < layers.size(); ++i) {
      ev::template_layer_added a;
      a.index = i;
      a.sha256 = digest_of(layers[i]);
      a.bytes = 1000 + i;
      emit(t, tenant, a);
      ready.layers.push_back({a.sha256, a.bytes});
    }
    ready.digest = template_digest(ready.layers, {}, "", "", {});
    emit(t, tenant, ready);
    return c.by_id.at(id);
  }
  void emit(const template_state& t, const std::string& tenant, ev::template_change change) {
    at += ev::nanoseconds(1000);
    apply(c, next_event(c, t, tenant, "someone", at, std::move(change)));
  }
};

const asker acme{"acme", "alice", false};
const asker globex{"globex", "gus", false};
const asker admin{"ops", "root", true};

} // namespace

BOOST_AUTO_TEST_SUITE(template_catalog)

BOOST_AUTO_TEST_CASE(the_fold_follows_a_template_from_created_to_ready_and_deleted) {
  stream s;
  auto t = s.make("tpl_1", "app", ev::template_scope::tenant, "acme", {1, 2});
  BOOST_TEST(t.status == template_status::ready);
  BOOST_TEST(t.layers_added.size() == 2u);
  BOOST_TEST(t.tenant == "acme");
  BOOST_TEST(s.c.sequence == 4u);
  auto ref = ref_of(t);
  BOOST_TEST(ref.id == "tpl_1");
  BOOST_TEST_REQUIRE(ref.layers.size() == 2u);
  BOOST_TEST((ref.layers[1] == digest_of(2)));
  BOOST_TEST((ref.digest == t.ready->digest));
  s.emit(t, "acme", ev::template_deleted{"user"});
  BOOST_TEST(s.c.by_id.at("tpl_1").status == template_status::deleted);
  BOOST_TEST(find(s.c, acme, "app") == nullptr);
}

BOOST_AUTO_TEST_CASE(a_duplicate_is_ignored_and_a_gap_is_refused) {
  stream s;
  auto t = s.make("tpl_1", "app", ev::template_scope::global, "ops", {1});
  const catalog before = s.c;
  // The last event again (a retried append): nothing changes.
  auto again = next_event(s.c, t, "ops", "x", s.at, ev::template_deleted{"user"});
  again.sequence = s.c.sequence;
  apply(s.c, again);
  BOOST_TEST((s.c == before));
  auto gap = next_event(s.c, t, "ops", "x", s.at, ev::template_deleted{"user"});
  gap.sequence = s.c.sequence + 2;
  BOOST_CHECK_THROW(apply(s.c, gap), std::invalid_argument);
  // Events of sandboxes are not the catalog's.
  ev::event other = again;
  other.sandbox_id = "sb_1";
  other.sequence = 99;
  apply(s.c, other);
  BOOST_TEST((s.c == before));
}

BOOST_AUTO_TEST_CASE(a_tenant_sees_the_global_templates_and_its_own_only) {
  stream s;
  s.make("tpl_g", "python", ev::template_scope::global, "ops", {1});
  s.make("tpl_a", "app", ev::template_scope::tenant, "acme", {2});
  s.make("tpl_b", "secret", ev::template_scope::tenant, "globex", {3});
  BOOST_TEST_REQUIRE(find(s.c, acme, "app") != nullptr);
  BOOST_TEST(find(s.c, acme, "python")->id == "tpl_g");
  // Another tenant's template is exactly as absent as a name never used.
  BOOST_TEST(find(s.c, acme, "secret") == nullptr);
  BOOST_TEST(find(s.c, globex, "app") == nullptr);
  std::vector<std::string> names;
  for (const auto* t : visible(s.c, acme))
    names.push_back(t->name);
  BOOST_TEST((names == std::vector<std::string>{"app", "python"}));
  // A tenant's own template shadows a global one of the same name, for it alone.
  s.make("tpl_own", "python", ev::template_scope::tenant, "acme", {4});
  BOOST_TEST(find(s.c, acme, "python")->id == "tpl_own");
  BOOST_TEST(find(s.c, globex, "python")->id == "tpl_g");
}

BOOST_AUTO_TEST_CASE(making_needs_a_free_name_and_admin_for_global_ones) {
  stream s;
  s.make("tpl_a", "app", ev::template_scope::tenant, "acme", {2});
  auto taken = may_make(s.c, acme, ev::template_scope::tenant, "app");
  BOOST_TEST_REQUIRE(!taken);
  BOOST_TEST(taken.code() == errc::conflict);
  BOOST_TEST(taken.err().message.find("tpl_a") != std::string::npos);
  // The same name in another tenant's scope is free.
  BOOST_TEST(bool(may_make(s.c, globex, ev::template_scope::tenant, "app")));
  auto global = may_make(s.c, acme, ev::template_scope::global, "tools");
  BOOST_TEST_REQUIRE(!global);
  BOOST_TEST(global.code() == errc::permission_denied);
  BOOST_TEST(bool(may_make(s.c, admin, ev::template_scope::global, "tools")));
  auto bad = may_make(s.c, acme, ev::template_scope::tenant, "../etc");
  BOOST_TEST_REQUIRE(!bad);
  BOOST_TEST(bad.code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(deleting_is_refused_while_sandboxes_or_templates_use_it) {
  stream s;
  auto base = s.make("tpl_p", "parent", ev::template_scope::tenant, "acme", {1});
  s.make("tpl_c", "child", ev::template_scope::tenant, "acme", {1, 2}, "tpl_p");
  auto used = may_delete(s.c, acme, base, {"sb_1", "sb_2"});
  BOOST_TEST_REQUIRE(!used);
  BOOST_TEST(used.code() == errc::conflict);
  BOOST_TEST(used.err().message.find("sb_1, sb_2") != std::string::npos);
  auto parent = may_delete(s.c, acme, base, {});
  BOOST_TEST_REQUIRE(!parent);
  BOOST_TEST(parent.code() == errc::conflict);
  BOOST_TEST(parent.err().message.find("child") != std::string::npos);
  auto g = s.make("tpl_g", "python", ev::template_scope::global, "ops", {5});
  auto not_admin = may_delete(s.c, acme, g, {});
  BOOST_TEST_REQUIRE(!not_admin);
  BOOST_TEST(not_admin.code() == errc::permission_denied);
  BOOST_TEST(bool(may_delete(s.c, admin, g, {})));
}

BOOST_AUTO_TEST_CASE(the_template_digest_covers_layers_order_and_config) {
  std::vector<ev::template_layer> ab{{digest_of(1), 10}, {digest_of(2), 20}};
  std::vector<ev::template_layer> ba{{digest_of(2), 20}, {digest_of(1), 10}};
  std::vector<ev::env_var> env{{"A", "1", false, std::nullopt}};
  const auto d = template_digest(ab, env, "/w", "", {"sh"});
  BOOST_TEST((d == template_digest(ab, env, "/w", "", {"sh"})));
  BOOST_TEST((d != template_digest(ba, env, "/w", "", {"sh"})));
  BOOST_TEST((d != template_digest(ab, {}, "/w", "", {"sh"})));
  BOOST_TEST((d != template_digest(ab, env, "/", "", {"sh"})));
  BOOST_TEST((d != template_digest(ab, env, "/w", "app", {"sh"})));
  BOOST_TEST((d != template_digest(ab, env, "/w", "", {"bash"})));
  // A command's arguments are kept apart: ["a b"] is not ["a", "b"].
  BOOST_TEST((template_digest(ab, env, "/w", "", {"a b"}) !=
              template_digest(ab, env, "/w", "", {"a", "b"})));
}

BOOST_AUTO_TEST_CASE(live_templates_hold_their_layers_and_deleted_ones_none) {
  stream s;
  auto a = s.make("tpl_a", "a", ev::template_scope::tenant, "acme", {1, 2});
  s.make("tpl_b", "b", ev::template_scope::tenant, "acme", {2, 3});
  auto held = held_layers(s.c);
  BOOST_TEST(held.size() == 3u);
  s.emit(a, "acme", ev::template_deleted{"user"});
  held = held_layers(s.c);
  BOOST_TEST(held.size() == 2u);
  BOOST_TEST(held.count(to_hex(digest_of(1))) == 0u);
  BOOST_TEST(held.count(to_hex(digest_of(2))) == 1u); // b still holds it
  // A build in progress holds what it added so far.
  template_state c;
  c.id = "tpl_c";
  c.name = "c";
  c.scope = ev::template_scope::tenant;
  s.emit(c, "acme", ev::template_created{});
  ev::template_layer_added l;
  l.sha256 = digest_of(9);
  s.emit(c, "acme", l);
  BOOST_TEST(held_layers(s.c).count(to_hex(digest_of(9))) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
