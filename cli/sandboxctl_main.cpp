#include "cli/sandboxctl_main.hpp"

#include "cli/command_table.hpp"
#include "cli/exit_codes.hpp"

#include <iostream>

namespace sandboxd::cli {

int sandboxctl_main(int argc, char** argv) {
  command_table t;
  try {
    t.app().parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return t.app().exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return t.app().exit(e);
  } catch (const CLI::ParseError& e) {
    context cx(t.globals(), environment::process());
    const CLI::App* at = t.chosen_command();
    const std::string where = at ? command_table::path_of(at) : "sandboxctl";
    return cx.usage(std::string(e.what()) + "; see '" + where + " --help'");
  }
  const run_fn* run = t.chosen();
  if (!run) {
    const CLI::App* at = t.chosen_command();
    std::cerr << (at ? at->help() : t.app().help());
    return k_exit_usage;
  }
  context cx(t.globals(), environment::process());
  return (*run)(cx);
}

} // namespace sandboxd::cli
