// The commands about sandboxctl itself: completion, version, and the hidden generator of
// docs/cli.md.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/completion.hpp"
#include "cli/exit_codes.hpp"
#include "cli/reference_markdown.hpp"
#include "cli/terminal_text.hpp"

#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "unknown"
#endif

namespace sandboxd::cli {
namespace {

int print_text(context& cx, const std::string& text, const char* kind) {
  if (cx.as_json())
    cx.print(json{{kind, text}});
  else
    cx.out(text);
  return k_exit_ok;
}

void add_completion(command_table& t) {
  auto* completion = t.add(t.app(), "completion", "Print a shell completion script: bash or zsh",
                           "  source <(sandboxctl completion bash)\n"
                           "  sandboxctl completion zsh > \"${fpath[1]}/_sandboxctl\"",
                           {});
  completion->require_subcommand(1);
  t.add(*completion, "bash", "The bash completion script", "  source <(sandboxctl completion bash)",
        [&t](context& cx) { return print_text(cx, bash_completion(t), "script"); });
  t.add(*completion, "zsh", "The zsh completion script",
        "  sandboxctl completion zsh > \"${fpath[1]}/_sandboxctl\"",
        [&t](context& cx) { return print_text(cx, zsh_completion(t), "script"); });
}

void add_version(command_table& t) {
  t.add(t.app(), "version", "Print sandboxctl's version and the daemon's", "  sandboxctl version",
        [](context& cx) {
          return with_client(cx, [&](api::client& client) {
            auto daemon = client.version();
            if (!daemon)
              return cx.fail(daemon.err());
            if (cx.as_json())
              cx.print(json{{"sandboxctl", SANDBOXD_VERSION},
                            {"sandboxd", *daemon},
                            {"tenant", client.who().tenant},
                            {"principal", client.who().principal},
                            {"scopes", client.who().scopes}});
            else
              cx.out("sandboxctl " + std::string(SANDBOXD_VERSION) + "\nsandboxd " +
                     terminal_text(*daemon) + "\nconnected as " +
                     terminal_text(client.who().principal) + " (tenant " +
                     terminal_text(client.who().tenant) + ")\n");
            return k_exit_ok;
          });
        });
}

void add_generate_docs(command_table& t) {
  auto* c = t.add(t.app(), "generate-docs", "Print docs/cli.md (the reference) from this table", "",
                  [&t](context& cx) { return print_text(cx, reference_markdown(t), "markdown"); });
  c->group(""); // hidden: for the build, not for users
}

} // namespace

void add_meta_commands(command_table& t) {
  add_completion(t);
  add_version(t);
  add_generate_docs(t);
}

} // namespace sandboxd::cli
