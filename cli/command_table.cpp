#include "cli/command_table.hpp"

#include "cli/commands.hpp"

namespace sandboxd::cli {

command_table::command_table()
    : app_("sandboxctl — the command line of sandboxd: isolated sandboxes for AI agents, "
           "their files and commands, bills, the audit log and the event stream",
           "sandboxctl") {
  app_.require_subcommand(0, 1);
  app_.fallthrough();
  app_.get_formatter()->column_width(34);
  app_.footer("\nConnection: --addr or SANDBOXD_ADDR (default unix:./var/sandboxd.sock), --token, "
              "--token-file or SANDBOXD_TOKEN (default ./var/dev-token).\nExit codes: 0 ok, 1 a "
              "check failed, 200 usage, 201-210 an error code (docs/errors.md); exec exits with "
              "its command's code.\nRun 'sandboxctl COMMAND --help' for a command's flags and an "
              "example.");
  auto& c = globals_.connection;
  app_.add_option("--addr", c.addr, "sandboxd's address: unix:PATH or tcp:HOST:PORT")
    ->type_name("ADDR")
    ->group("Global");
  app_.add_option("--token", c.token, "bearer token (visible to other users in ps: prefer a file)")
    ->type_name("TOKEN")
    ->group("Global");
  app_.add_option("--token-file", c.token_file, "read the token from this file")
    ->type_name("FILE")
    ->group("Global");
  app_.add_option("--tls-ca", c.tls_ca, "PEM file of the CAs to trust for TLS (tcp: addresses)")
    ->type_name("FILE")
    ->group("Global");
  app_
    .add_flag("--json", globals_.json,
              "print one JSON document (JSON lines for streams) and nothing else on stdout")
    ->group("Global");
  app_.set_help_flag("-h,--help", "print this help and exit");

  add_sandbox_commands(*this);
  add_exec_commands(*this);
  add_file_commands(*this);
  add_template_commands(*this);
  add_snapshot_commands(*this);
  add_event_commands(*this);
  add_report_commands(*this);
  add_replay_commands(*this);
  add_projection_commands(*this);
  add_check_commands(*this);
  add_pool_commands(*this);
  add_meta_commands(*this);

  // A repeatable flag takes one value per use (--label a=b --label c=d): without this CLI11
  // lets it swallow the words after it, "--" included, so `exec ID --env A=1 -- sh -c x`
  // would lose its "--".
  for (CLI::App* c : order_)
    for (CLI::Option* o : c->get_options())
      if (!o->get_positional() && o->get_expected_max() > 1)
        o->allow_extra_args(false);
}

CLI::App* command_table::add(CLI::App& parent, const std::string& name, const std::string& summary,
                             const std::string& example, run_fn run) {
  CLI::App* c = parent.add_subcommand(name, summary);
  c->fallthrough();
  c->set_help_flag("-h,--help", "print this help and exit");
  c->footer((example.empty() ? "" : "\nExample:\n" + example + "\n") +
            "\nGlobal flags (before or after the command): --addr ADDR, --token TOKEN, "
            "--token-file FILE, --tls-ca FILE, --json.");
  commands_[c] = {example, std::move(run)};
  order_.push_back(c);
  return c;
}

std::string command_table::example(const CLI::App* command) const {
  auto it = commands_.find(command);
  return it == commands_.end() ? "" : it->second.first;
}

std::string command_table::path_of(const CLI::App* command) {
  std::string path;
  for (const CLI::App* a = command; a; a = a->get_parent())
    path = a->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

const CLI::App* command_table::chosen_command() const {
  const CLI::App* at = &app_;
  for (;;) {
    auto subs = at->get_subcommands();
    if (subs.empty())
      break;
    at = subs.front();
  }
  return at == &app_ ? nullptr : at;
}

const run_fn* command_table::chosen() const {
  const CLI::App* c = chosen_command();
  if (!c)
    return nullptr;
  auto it = commands_.find(c);
  if (it == commands_.end() || !it->second.second)
    return nullptr;
  return &it->second.second;
}

std::vector<std::string> global_value_options() {
  return {"--addr", "--token", "--token-file", "--tls-ca"};
}

} // namespace sandboxd::cli
