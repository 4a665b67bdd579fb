// The sandbox commands: create, get, list, set-timeout, pause, resume, delete.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/first_use_build.hpp"
#include "cli/sandbox_view.hpp"
#include "cli/terminal_text.hpp"
#include "cli/value_args.hpp"

namespace sandboxd::cli {
namespace {

void add_id(CLI::App* c, std::string& id) {
  c->add_option("id", id, "the sandbox's id (sandboxctl list)")->required()->type_name("ID");
}

// The sandbox, as --json or for people; `line` is the text form (the id, "ID paused", ...).
int show(context& cx, const api::sandbox_info& s, const std::string& line) {
  if (cx.as_json())
    cx.print(sandbox_json(s));
  else
    cx.out(terminal_text(line) + "\n");
  if (s.state == "failed")
    return cx.fail(make_error(errc::internal, "sandbox " + s.id + " failed: " + s.failure +
                                                "; delete it (sandboxctl delete " + s.id + ")"));
  return k_exit_ok;
}

// --timeout, --idle-timeout, --lifetime, --paused-retention, --auto-pause into a change.
struct timeout_flags {
  std::string timeout, idle_timeout, lifetime, paused_retention, auto_pause;

  void add_to(CLI::App* c, bool on_create) {
    c->add_option("--timeout", timeout,
                  on_create ? "the sandbox ends this long after creation (90s, 15m, 2h)"
                            : "the sandbox ends this long from now (90s, 15m, 2h; 0: never)")
      ->type_name("DURATION");
    c->add_option("--idle-timeout", idle_timeout,
                  "ends (or pauses, with --auto-pause) after this long without activity")
      ->type_name("DURATION");
    c->add_option("--lifetime", lifetime, "a hard limit counted from creation")
      ->type_name("DURATION");
    c->add_option("--paused-retention", paused_retention,
                  "a paused sandbox is deleted after this long")
      ->type_name("DURATION");
    c->add_flag("--auto-pause{filesystem}", auto_pause,
                "at the timeout or idle timeout, pause instead of deleting (=memory keeps the "
                "processes)")
      ->type_name("[=filesystem|memory]");
  }

  // The change, or the usage error's exit code.
  std::optional<api::timeout_change> read(context& cx, int& exit) const {
    api::timeout_change t;
    for (auto [flag, text, slot] :
         {std::tuple{"--timeout", &timeout, &t.timeout},
          std::tuple{"--idle-timeout", &idle_timeout, &t.idle_timeout},
          std::tuple{"--lifetime", &lifetime, &t.lifetime},
          std::tuple{"--paused-retention", &paused_retention, &t.paused_retention}}) {
      auto d = duration_flag(cx, flag, *text);
      if (!d) {
        exit = d.exit;
        return std::nullopt;
      }
      *slot = *d.value;
    }
    if (!auto_pause.empty()) {
      auto m = parse_pause_mode(auto_pause);
      if (!m) {
        exit = cx.usage("--auto-pause: " + m.err().message);
        return std::nullopt;
      }
      t.on_idle = std::optional<events::pause_mode>(*m);
    }
    return t;
  }

  bool any() const {
    return !(timeout.empty() && idle_timeout.empty() && lifetime.empty() &&
             paused_retention.empty() && auto_pause.empty());
  }
};

void add_create(command_table& t) {
  struct args {
    api::create_options o;
    std::string cpus;
    std::vector<std::string> env, secret_env, labels, allow;
    std::string network;
    timeout_flags timeouts;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "create",
                  "Create a sandbox and print its id once it runs (the first create from a stock "
                  "template on a node shows its build on stderr)",
                  "  ID=$(sandboxctl create --runtime crun --memory 1024 --timeout 2h "
                  "--label team=search)\n"
                  "  sandboxctl --json create --idle-timeout 10m --auto-pause=memory\n"
                  "  sandboxctl create --runtime crun --allow pypi.org --allow "
                  "'*.pythonhosted.org:443' --allow 10.20.0.0/16:5432",
                  [a](context& cx) -> int {
                    auto o = a->o;
                    if (!a->cpus.empty()) {
                      auto m = parse_cpus(a->cpus);
                      if (!m)
                        return cx.usage("--cpus: " + m.err().message);
                      o.limits.cpu_millicores = *m;
                    }
                    if (int e = env_flags(cx, "--env", a->env, false, o.env))
                      return e;
                    if (int e = env_flags(cx, "--secret-env", a->secret_env, true, o.env))
                      return e;
                    auto labels = label_flags(cx, a->labels);
                    if (!labels)
                      return labels.exit;
                    o.labels = *labels.value;
                    int exit = 0;
                    auto timeouts = a->timeouts.read(cx, exit);
                    if (!timeouts)
                      return exit;
                    o.timeouts = *timeouts;
                    auto net = network_flags(a->network, a->allow);
                    if (!net)
                      return cx.usage(net.err().message);
                    o.network = std::move(net).value();
                    return with_client(cx, [&](api::client& client) {
                      if (o.from_snapshot.empty()) // a fork's template is its snapshot's
                        if (int e = build_before_create(cx, client, o.template_name))
                          return e;
                      auto s = client.create(o);
                      if (!s)
                        return cx.fail(s.err());
                      return show(cx, *s, s->id);
                    });
                  });
  c->add_option("--template", a->o.template_name, "the template (default: base)")
    ->type_name("NAME");
  c->add_option("--runtime", a->o.runtime, "the sandbox runtime (default: the node's)")
    ->type_name("runsc|crun");
  c->add_option("--from-snapshot", a->o.from_snapshot,
                "a fork: its files start as this snapshot (template and runtime are the "
                "snapshot's)")
    ->type_name("SNAPSHOT");
  c->add_option("--memory", a->o.limits.memory_mib, "memory limit in MiB (default 512)")
    ->type_name("MiB");
  c->add_option("--cpus", a->cpus, "CPUs, fractions allowed: 0.5 (default 1)")->type_name("N");
  c->add_option("--disk", a->o.limits.disk_mib, "writable-layer limit in MiB (default: none)")
    ->type_name("MiB");
  c->add_option("--pids", a->o.limits.pids, "process limit (default 512)")->type_name("N");
  c->add_option("--env", a->env, "an environment variable every exec sees (repeatable)")
    ->type_name("K=V");
  c->add_option("--secret-env", a->secret_env,
                "the same, its value never logged (nor any hash of it)")
    ->type_name("K=V");
  a->timeouts.add_to(c, true);
  c->add_option("--label", a->labels, "a label to find it by (repeatable)")->type_name("K=V");
  c->add_option("--request-id", a->o.client_request_id,
                "makes the create idempotent: a retry with the same id returns the same sandbox")
    ->type_name("ID");
  c->add_flag("--no-pool", a->o.no_pool,
              "make it cold even when a warm pool holds one ready (docs/pools.md)");
  c->add_option("--network", a->network,
                "none (loopback only, the default; allowlist with --allow), allowlist, or all "
                "(public addresses; never the node, link-local or private ones unless allowed)")
    ->type_name("MODE");
  c->add_option("--allow", a->allow,
                "a destination the sandbox may reach: a name, *.name, an address or CIDR, with "
                ":PORTS (repeatable; implies --network allowlist; docs/network.md)")
    ->type_name("DEST");
}

void add_get(command_table& t) {
  auto id = std::make_shared<std::string>();
  auto* c = t.add(t.app(), "get", "Show a sandbox: state, template, runtime, limits, labels, times",
                  "  sandboxctl get sb-0a1b2c3d4e5f\n"
                  "  sandboxctl --json get sb-0a1b2c3d4e5f | jq -r .state",
                  [id](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto s = client.get(*id);
                      if (!s)
                        return cx.fail(s.err());
                      if (cx.as_json())
                        cx.print(sandbox_json(*s));
                      else
                        cx.out(sandbox_text(*s, cx.now()));
                      return k_exit_ok;
                    });
                  });
  add_id(c, *id);
}

void add_list(command_table& t) {
  struct args {
    std::vector<std::string> states, labels;
    bool all = false, quiet = false;
    std::uint32_t limit = 100;
    std::string page_token;
  };
  auto a = std::make_shared<args>();
  auto* c =
    t.add(t.app(), "list", "List sandboxes, newest first (from the read model: lags a few ms)",
          "  sandboxctl list --label team=search\n"
          "  sandboxctl list --state paused --limit 20",
          [a](context& cx) {
            auto labels = label_flags(cx, a->labels);
            if (!labels)
              return labels.exit;
            api::list_filter f;
            f.states = a->states;
            f.labels = *labels.value;
            f.include_deleted = a->all;
            f.limit = a->limit;
            f.page_token = a->page_token;
            return with_client(cx, [&](api::client& client) {
              auto page = client.list(f);
              if (!page)
                return cx.fail(page.err());
              if (cx.as_json()) {
                json rows = json::array();
                for (const auto& s : page->rows)
                  rows.push_back(sandbox_row_json(s));
                cx.print(
                  json{{"sandboxes", std::move(rows)}, {"next_page_token", page->next_page_token}});
                return k_exit_ok;
              }
              if (a->quiet) {
                for (const auto& s : page->rows)
                  cx.out(terminal_text(s.id) + "\n");
              } else {
                cx.out(sandbox_table(page->rows));
              }
              if (!page->next_page_token.empty())
                cx.note("more sandboxes: add --page-token " + page->next_page_token);
              return k_exit_ok;
            });
          });
  c->add_option("--state", a->states,
                "only this state (repeatable): creating, running, pausing, paused, resuming, "
                "deleting, deleted, failed")
    ->type_name("STATE");
  c->add_option("--label", a->labels, "only sandboxes with this label (repeatable: all must match)")
    ->type_name("K=V");
  c->add_flag("--all,-a", a->all, "deleted sandboxes too");
  c->add_option("--limit", a->limit, "at most this many rows (at most 1000; default 100)")
    ->type_name("N");
  c->add_option("--page-token", a->page_token, "the next page, as the last listing said")
    ->type_name("TOKEN");
  c->add_flag("--quiet,-q", a->quiet, "only the ids, one per line");
}

void add_set_timeout(command_table& t) {
  struct args {
    std::string id;
    timeout_flags timeouts;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "set-timeout", "Change a sandbox's timeouts (0 turns one off)",
                  "  sandboxctl set-timeout sb-0a1b2c3d4e5f --timeout 1h30m\n"
                  "  sandboxctl set-timeout sb-0a1b2c3d4e5f --idle-timeout 0",
                  [a](context& cx) {
                    if (!a->timeouts.any())
                      return cx.usage("set-timeout needs --timeout, --idle-timeout, --lifetime, "
                                      "--paused-retention or --auto-pause");
                    int exit = 0;
                    auto change = a->timeouts.read(cx, exit);
                    if (!change)
                      return exit;
                    return with_client(cx, [&](api::client& client) {
                      auto s = client.set_timeouts(a->id, *change);
                      if (!s)
                        return cx.fail(s.err());
                      if (cx.as_json())
                        cx.print(sandbox_json(*s));
                      else
                        cx.out(sandbox_text(*s, cx.now()));
                      return k_exit_ok;
                    });
                  });
  add_id(c, a->id);
  a->timeouts.add_to(c, false);
}

void add_pause(command_table& t) {
  struct args {
    std::string id;
    std::string mode = "filesystem";
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(t.app(), "pause",
                  "Pause a sandbox: filesystem (processes end, files kept and readable) or "
                  "memory (processes kept)",
                  "  sandboxctl pause sb-0a1b2c3d4e5f --mode memory", [a](context& cx) {
                    auto mode = parse_pause_mode(a->mode);
                    if (!mode)
                      return cx.usage("--mode: " + mode.err().message);
                    return with_client(cx, [&](api::client& client) {
                      auto s = client.pause(a->id, *mode);
                      if (!s)
                        return cx.fail(s.err());
                      return show(cx, *s, s->id + " " + s->state + " (" + a->mode + ")");
                    });
                  });
  add_id(c, a->id);
  c->add_option("--mode", a->mode, "filesystem (default) or memory")
    ->type_name("filesystem|memory");
}

void add_resume(command_table& t) {
  auto id = std::make_shared<std::string>();
  auto* c = t.add(t.app(), "resume", "Resume a paused sandbox",
                  "  sandboxctl resume sb-0a1b2c3d4e5f", [id](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto s = client.resume(*id);
                      if (!s)
                        return cx.fail(s.err());
                      return show(cx, *s, s->id + " " + s->state);
                    });
                  });
  add_id(c, *id);
}

void add_delete(command_table& t) {
  auto id = std::make_shared<std::string>();
  auto* c = t.add(t.app(), "delete", "Delete a sandbox: its processes and files are gone",
                  "  sandboxctl delete sb-0a1b2c3d4e5f", [id](context& cx) {
                    return with_client(cx, [&](api::client& client) {
                      auto r = client.remove(*id);
                      if (!r)
                        return cx.fail(r.err());
                      if (cx.as_json())
                        cx.print(json{{"id", *id}, {"state", "deleted"}});
                      else
                        cx.out(terminal_text(*id) + " deleted\n");
                      return k_exit_ok;
                    });
                  });
  add_id(c, *id);
}

void add_redact(command_table& t) {
  struct args {
    std::string id, reason;
  };
  auto a = std::make_shared<args>();
  auto* c = t.add(
    t.app(), "redact",
    "Remove a deleted sandbox's labels, environment names, command lines and file paths from "
    "the read models (the audit chain still verifies)",
    "  sandboxctl redact sb-0a1b2c3d4e5f --reason \"privacy request 1234\"", [a](context& cx) {
      return with_client(cx, [&](api::client& client) {
        auto r = client.redact(a->id, a->reason);
        if (!r)
          return cx.fail(r.err());
        if (cx.as_json())
          cx.print(json{{"id", a->id}, {"redacted", true}});
        else
          cx.out(terminal_text(a->id) + " redacted\n");
        return k_exit_ok;
      });
    });
  add_id(c, a->id);
  c->add_option("--reason", a->reason, "why, kept in the audit log (a ticket or request id)");
}

} // namespace

void add_sandbox_commands(command_table& t) {
  add_create(t);
  add_get(t);
  add_list(t);
  add_set_timeout(t);
  add_pause(t);
  add_resume(t);
  add_delete(t);
  add_redact(t);
}

} // namespace sandboxd::cli
