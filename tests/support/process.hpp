// Small process helpers for tests: run a shell command and capture its output.
#pragma once

#include "tests/support/build_tree.hpp"

#include <string>
#include <vector>

#include <sys/types.h>

namespace sandboxd::test {

struct command_result {
  int exit_code = -1; // -1 when the command did not exit normally
  std::string output; // stdout and stderr together
};

// Runs `/bin/sh -c command`, waiting for it to end.
command_result run_shell(const std::string& command);

// Like run_shell, but throws std::runtime_error naming the command and its output
// when the exit code is not 0.
std::string check_shell(const std::string& command);

// Starts `args[0]` (a path) with `args`, its stdout and stderr going to `output_path`
// (truncated, or appended to with `append`), in `cwd` when given; returns its pid, not
// waited for. Everything the child needs is made before the fork (the parent has threads).
pid_t spawn_logged(const std::vector<std::string>& args, const std::string& output_path,
                   bool append = false, const std::string& cwd = {});

// Quotes a string for /bin/sh.
std::string shell_quote(const std::string& s);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

// The repository root (SANDBOXD_SOURCE_DIR, set by ctest, or found from the binary's build
// directory: build_tree.hpp).
std::string source_dir();

} // namespace sandboxd::test
