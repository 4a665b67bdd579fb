// node_cleanup — the shell command that removes what a sandboxd node left in a directory
// of a test or benchmark, however the node ended: its crun and runsc containers deleted,
// processes working in the directory killed, everything mounted below it (and below the
// data directories' /run/sandboxd entries) unmounted, then the directory removed. Meant
// for a guardian (guardian.hpp), which runs it even after a SIGKILL of its owner.
#pragma once

#include <string>
#include <vector>

namespace sandboxd::test {

// `dir` holds the node's data directory at `dir`/data; `entries` are the /run/sandboxd
// entries its data directories may have been bound at (runtime/data_entry.hpp).
std::string node_cleanup_command(const std::string& dir, const std::vector<std::string>& entries);

} // namespace sandboxd::test
