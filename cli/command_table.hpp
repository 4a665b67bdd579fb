// command_table — every sandboxctl command in one CLI11 tree: its name, one-line summary,
// flags with their help, an example, and the function that runs it. --help, docs/cli.md
// (reference_markdown.hpp) and the completion scripts (completion.hpp) are all generated
// from this tree, so they cannot disagree.
//
// Global flags (--addr, --token, --token-file, --tls-ca, --json) are accepted before or
// after the command. A command that has subcommands of its own and runs without one
// (`audit`) has a runner too; one that has none (`completion`) requires a subcommand.
#pragma once

#include "cli/context.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::cli {

using run_fn = std::function<int(context&)>;

class command_table {
public:
  // Builds the whole tree (every command of commands.hpp).
  command_table();

  CLI::App& app() { return app_; }
  const CLI::App& app() const { return app_; }
  global_options& globals() { return globals_; }

  // Adds a command under `parent`: summary (one line), an example shown by --help and in
  // the reference, and its runner (empty for a command that only groups subcommands).
  CLI::App* add(CLI::App& parent, const std::string& name, const std::string& summary,
                const std::string& example, run_fn run);

  // The example of a command ("" for the top level).
  std::string example(const CLI::App* command) const;
  // The commands in the order they were added (the tree's order), hidden ones included.
  const std::vector<CLI::App*>& commands() const { return order_; }
  // "sandboxctl audit verify"
  static std::string path_of(const CLI::App* command);

  // After app().parse(): the deepest command given and its runner; nullptr when no command
  // was given or the command given needs a subcommand.
  const run_fn* chosen() const;
  const CLI::App* chosen_command() const;

private:
  CLI::App app_;
  global_options globals_;
  std::map<const CLI::App*, std::pair<std::string, run_fn>> commands_;
  std::vector<CLI::App*> order_;
};

// Options that take a value and belong to the top level (for the completion scripts, which
// must skip their values when looking for the command word).
std::vector<std::string> global_value_options();

} // namespace sandboxd::cli
