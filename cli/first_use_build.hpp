// first_use_build — the first create from a stock template on a node waits for the template's
// build (minutes of mmdebstrap). sandboxctl create asks for that build itself first, through
// Templates.build (what the create would have started; any tenant may), so that its phases
// show on stderr — redrawn in place on a terminal, a line per phase elsewhere — instead of a
// silent wait; stdout keeps only the create's answer. A template that is built already (or is
// not a stock one) costs one Templates.get.
#pragma once

#include "api/client.hpp"
#include "cli/context.hpp"

#include <string>

namespace sandboxd::cli {

// One progress line of a build: "python:  42% unpacking the cached python root filesystem"
// (no percentage while unknown), tenant-free but escaped like every line for people.
std::string build_progress_line(const std::string& name, const std::string& phase, double fraction);

// Builds stock template `name` ahead of the create when this node has not built it, showing
// its progress. 0 to go on with the create, else the exit code of the build's failure (the
// create would have failed the same way).
int build_before_create(context& cx, api::client& client, const std::string& name);

} // namespace sandboxd::cli
