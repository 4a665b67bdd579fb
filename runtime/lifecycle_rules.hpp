// lifecycle_rules — which driver call each sandbox status allows, shared by every
// driver so that all of them answer the same call in the same status the same way.
//
//   start   created, stopped
//   exec    running
//   pause   running
//   resume  paused_filesystem, paused_memory
//   write   every status but paused_memory (its processes may hold the files)
//   read, list_dir, stat, usage, remove: every status
#pragma once

#include "runtime/driver.hpp"

namespace sandboxd::runtime {

enum class operation { start, exec, pause, resume, write };

// conflict, with a message naming the sandbox, its status and what to do; or ok.
outcome<void> check_allowed(const sandbox_info& sandbox, operation op);

} // namespace sandboxd::runtime
