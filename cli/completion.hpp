// completion — bash and zsh completion scripts for sandboxctl, generated from the command
// table (`sandboxctl completion bash|zsh`): commands and subcommands, each command's flags,
// the choices of a flag whose value is written "a|b|c" in its help, local files for
// LOCAL/FILE values and arguments, and sandbox ids (from `sandboxctl list -q`) for ID
// arguments.
#pragma once

#include "cli/command_table.hpp"

#include <string>

namespace sandboxd::cli {

std::string bash_completion(const command_table& t);
std::string zsh_completion(const command_table& t);

} // namespace sandboxd::cli
