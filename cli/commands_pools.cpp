// The warm pool commands (admin scope, docs/pools.md): pool list, pool set, pool rm.
//
// A pool keeps sandboxes of one template, runtime and limits ready, so a create that asks for
// exactly those is answered from it in milliseconds. Its sandboxes belong to no tenant until
// one is claimed; `pool list` shows them (and each pool's hits, misses and refill time).
// What `pool set` and `pool rm` change lasts until the daemon stops ([[pools]] in the config
// file is what a start begins with).
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/table.hpp"
#include "cli/terminal_text.hpp"
#include "cli/value_args.hpp"

#include <cstdio>

namespace sandboxd::cli {
namespace {

json pool_json(const api::pool_info& p) {
  const auto& s = p.settings;
  return {{"key", p.key},
          {"template", s.template_name},
          {"runtime", s.runtime},
          {"memory_mib", s.limits.memory_mib},
          {"cpu_millicores", s.limits.cpu_millicores},
          {"pids", s.limits.pids},
          {"disk_mib", s.limits.disk_mib},
          {"size", s.size},
          {"maximum", s.maximum},
          {"refill_per_second", s.refill_per_second},
          {"ready", p.ready},
          {"making", p.making},
          {"target", p.target},
          {"hits", p.hits},
          {"misses", p.misses},
          {"made", p.made},
          {"failed", p.failed},
          {"retired", p.retired},
          {"refill_seconds_mean", p.refill_seconds_mean},
          {"refill_seconds_max", p.refill_seconds_max},
          {"ready_ids", p.ready_ids},
          {"last_error", p.last_error.empty() ? json(nullptr) : json(p.last_error)}};
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", s);
  return buf;
}

std::string list_text(const std::vector<api::pool_info>& all) {
  if (all.empty())
    return "no warm pools (add [[pools]] to the config file, or sandboxctl pool set)\n";
  std::vector<row> rows;
  for (const auto& p : all)
    rows.push_back(
      {p.key, std::to_string(p.ready) + "/" + std::to_string(p.target), std::to_string(p.making),
       std::to_string(p.settings.size) + ".." + std::to_string(p.settings.maximum),
       std::to_string(p.hits), std::to_string(p.misses), seconds_text(p.refill_seconds_mean),
       p.last_error.empty() ? "-" : p.last_error});
  std::string out = render_table(
    {"POOL", "READY/TARGET", "MAKING", "SIZE", "HITS", "MISSES", "REFILL", "LAST ERROR"}, rows);
  for (const auto& p : all)
    for (const auto& id : p.ready_ids)
      out += terminal_text(p.key) + " ready " + terminal_text(id) + "\n";
  return out;
}

// The flags that name a pool's key.
struct key_flags {
  api::pool_options o;
  std::string cpus;

  void add_to(CLI::App* c) {
    c->add_option("--template", o.template_name, "the template (default: base)")->type_name("NAME");
    c->add_option("--runtime", o.runtime, "the runtime (default: the node's)")
      ->type_name("runsc|crun");
    c->add_option("--memory", o.limits.memory_mib, "memory limit in MiB (default 512)")
      ->type_name("MiB");
    c->add_option("--cpus", cpus, "CPUs, fractions allowed: 0.5 (default 1)")->type_name("N");
    c->add_option("--disk", o.limits.disk_mib, "writable-layer limit in MiB (default 10240)")
      ->type_name("MiB");
    c->add_option("--pids", o.limits.pids, "process limit (default 512)")->type_name("N");
  }
  // The options with --cpus read; nullopt after a usage error (its exit in `exit`).
  std::optional<api::pool_options> read(context& cx, int& exit) const {
    auto out = o;
    if (!cpus.empty()) {
      auto m = parse_cpus(cpus);
      if (!m) {
        exit = cx.usage("--cpus: " + m.err().message);
        return std::nullopt;
      }
      out.limits.cpu_millicores = *m;
    }
    return out;
  }
};

} // namespace

void add_pool_commands(command_table& t) {
  auto* group = t.add(t.app(), "pool", "Warm pools of ready sandboxes (admin)",
                      "  sandboxctl pool list\n"
                      "  sandboxctl pool set --template python --runtime crun --size 4",
                      {});
  group->require_subcommand(1);
  t.add(*group, "list",
        "Each warm pool: its key, ready sandboxes against its target, hits, misses, refill "
        "time, and the ids of its ready sandboxes",
        "  sandboxctl pool list\n  sandboxctl --json pool list", [](context& cx) {
          return with_client(cx, [&](api::client& client) {
            auto all = client.pools();
            if (!all)
              return cx.fail(all.err());
            if (cx.as_json()) {
              json out = json::array();
              for (const auto& p : *all)
                out.push_back(pool_json(p));
              cx.print(json{{"pools", out}});
            } else {
              cx.out(list_text(*all));
            }
            return k_exit_ok;
          });
        });
  auto set = std::make_shared<key_flags>();
  auto* s = t.add(*group, "set",
                  "Start a warm pool, or change its size, maximum and refill rate (until the "
                  "daemon stops)",
                  "  sandboxctl pool set --template python --runtime crun --size 4 --maximum 16",
                  [set](context& cx) {
                    int exit = 0;
                    auto o = set->read(cx, exit);
                    if (!o)
                      return exit;
                    if (o->maximum < o->size)
                      o->maximum = o->size;
                    return with_client(cx, [&](api::client& client) {
                      auto r = client.set_pool(*o);
                      if (!r)
                        return cx.fail(r.err());
                      if (cx.as_json())
                        cx.print(json{{"set", true}});
                      return k_exit_ok;
                    });
                  });
  set->add_to(s);
  s->add_option("--size", set->o.size, "ready sandboxes kept at rest")->type_name("N");
  s->add_option("--maximum", set->o.maximum, "most it holds when demand grows (default: the size)")
    ->type_name("N");
  s->add_option("--rate", set->o.refill_per_second,
                "creates started per second at most (default 20)")
    ->type_name("N");
  auto rm = std::make_shared<key_flags>();
  auto* r = t.add(*group, "rm", "End a warm pool: its ready sandboxes are deleted",
                  "  sandboxctl pool rm --template python --runtime crun", [rm](context& cx) {
                    int exit = 0;
                    auto o = rm->read(cx, exit);
                    if (!o)
                      return exit;
                    return with_client(cx, [&](api::client& client) {
                      auto removed = client.remove_pool(*o);
                      if (!removed)
                        return cx.fail(removed.err());
                      if (cx.as_json())
                        cx.print(json{{"removed", *removed}});
                      else if (!*removed)
                        cx.out("no such pool\n");
                      return *removed ? k_exit_ok : exit_code_of(errc::not_found);
                    });
                  });
  rm->add_to(r);
}

} // namespace sandboxd::cli
