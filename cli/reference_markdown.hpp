// reference_markdown — docs/cli.md, generated from the command table: the conventions every
// command shares (connection, --json, exit codes, durations and times), then each command's
// usage, flags and example. `sandboxctl generate-docs` prints it; a test compares it with the
// checked-in file, so the reference cannot drift from --help.
#pragma once

#include "cli/command_table.hpp"

#include <string>

namespace sandboxd::cli {

std::string reference_markdown(const command_table& t);

} // namespace sandboxd::cli
