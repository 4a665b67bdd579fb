// Small process helpers for tests: run a shell command and capture its output.
#pragma once

#include <string>

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

// Quotes a string for /bin/sh.
std::string shell_quote(const std::string& s);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

// The repository root (SANDBOXD_SOURCE_DIR, set by ctest, or found from the binary).
std::string source_dir();

} // namespace sandboxd::test
