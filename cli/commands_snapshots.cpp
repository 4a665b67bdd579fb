// The snapshot commands (docs/snapshots.md): snapshot create, list, show, rm, and fork.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/sandbox_view.hpp"
#include "cli/table.hpp"
#include "cli/terminal_text.hpp"

namespace sandboxd::cli {
namespace {

json snapshot_json(const api::snapshot_info& s) {
  return json{{"id", s.id},
              {"name", s.name},
              {"sandbox_id", s.sandbox_id},
              {"taken_at_ns", s.taken_at_ns},
              {"template", s.template_name},
              {"runtime", s.runtime},
              {"layer_bytes", s.layer_bytes},
              {"referenced_bytes", s.referenced_bytes},
              {"exclusive_bytes", s.exclusive_bytes},
              {"sequence", s.sequence}};
}

int show_snapshot(context& cx, const api::snapshot_info& s) {
  if (cx.as_json())
    cx.print(snapshot_json(s));
  else
    cx.out(terminal_text(s.id) + "\n");
  return k_exit_ok;
}

std::string list_text(const std::vector<api::snapshot_info>& all) {
  std::vector<row> rows;
  for (const auto& s : all)
    rows.push_back({s.id, s.sandbox_id, s.template_name, s.runtime, human_bytes(s.layer_bytes),
                    human_bytes(s.exclusive_bytes), s.name});
  return render_table({"ID", "SANDBOX", "TEMPLATE", "RUNTIME", "LAYER", "EXCLUSIVE", "NAME"}, rows);
}

} // namespace

void add_snapshot_commands(command_table& t) {
  auto* group = t.add(t.app(), "snapshot",
                      "Snapshots of sandboxes' writable layers (read-only, copy-on-write; they "
                      "outlive their sandbox): create, list, show, rm",
                      "  SNAP=$(sandboxctl snapshot create ID --name before-upgrade)\n"
                      "  sandboxctl create --from-snapshot $SNAP",
                      {});
  group->require_subcommand(0, 1);

  struct create_args {
    std::string id, name;
  };
  auto c = std::make_shared<create_args>();
  auto* create = t.add(*group, "create",
                       "Snapshot a sandbox's writable layer and print the snapshot's id (running: "
                       "its processes are frozen for the instant; or paused)",
                       "  sandboxctl snapshot create ID --name before-upgrade", [c](context& cx) {
                         return with_client(cx, [&](api::client& client) {
                           auto s = client.snapshot(c->id, c->name);
                           if (!s)
                             return cx.fail(s.err());
                           return show_snapshot(cx, *s);
                         });
                       });
  create->add_option("id", c->id, "the sandbox's id (sandboxctl list)")
    ->required()
    ->type_name("ID");
  create->add_option("--name", c->name, "a name for it (at most 128 bytes)")->type_name("NAME");

  auto of = std::make_shared<std::string>();
  auto* list = t.add(*group, "list", "This tenant's snapshots, oldest first",
                     "  sandboxctl snapshot list\n  sandboxctl --json snapshot list --sandbox ID",
                     [of](context& cx) {
                       return with_client(cx, [&](api::client& client) {
                         auto all = client.list_snapshots(*of);
                         if (!all)
                           return cx.fail(all.err());
                         if (cx.as_json()) {
                           json out = json::array();
                           for (const auto& s : *all)
                             out.push_back(snapshot_json(s));
                           cx.print(json{{"snapshots", out}});
                         } else {
                           cx.out(list_text(*all));
                         }
                         return k_exit_ok;
                       });
                     });
  list->add_option("--sandbox", *of, "only the snapshots of this sandbox")->type_name("ID");

  auto shown = std::make_shared<std::string>();
  auto* show =
    t.add(*group, "show", "One snapshot: its sandbox, template, runtime and bytes",
          "  sandboxctl --json snapshot show snap-0123456789abcdef", [shown](context& cx) {
            return with_client(cx, [&](api::client& client) {
              auto s = client.get_snapshot(*shown);
              if (!s)
                return cx.fail(s.err());
              if (cx.as_json())
                cx.print(snapshot_json(*s));
              else
                cx.out(list_text({*s}));
              return k_exit_ok;
            });
          });
  show->add_option("snapshot", *shown, "the snapshot's id (sandboxctl snapshot list)")
    ->required()
    ->type_name("SNAPSHOT");

  auto removed = std::make_shared<std::string>();
  auto* rm = t.add(*group, "rm", "Delete a snapshot (forks made from it keep their layers)",
                   "  sandboxctl snapshot rm snap-0123456789abcdef", [removed](context& cx) {
                     return with_client(cx, [&](api::client& client) {
                       auto r = client.delete_snapshot(*removed);
                       if (!r)
                         return cx.fail(r.err());
                       if (cx.as_json())
                         cx.print(json{{"deleted", *removed}});
                       return k_exit_ok;
                     });
                   });
  rm->add_option("snapshot", *removed, "the snapshot's id (sandboxctl snapshot list)")
    ->required()
    ->type_name("SNAPSHOT");

  auto forked = std::make_shared<std::string>();
  auto* fork = t.add(t.app(), "fork",
                     "Snapshot a sandbox and create a new sandbox from the snapshot (its files "
                     "as they are now, fresh processes); print the new sandbox's id",
                     "  NEW=$(sandboxctl fork ID)", [forked](context& cx) {
                       return with_client(cx, [&](api::client& client) {
                         auto s = client.fork(*forked);
                         if (!s)
                           return cx.fail(s.err());
                         if (cx.as_json())
                           cx.print(sandbox_json(*s));
                         else
                           cx.out(terminal_text(s->id) + "\n");
                         return k_exit_ok;
                       });
                     });
  fork->add_option("id", *forked, "the sandbox's id (sandboxctl list)")
    ->required()
    ->type_name("ID");
}

} // namespace sandboxd::cli
