// exec_guard — every exec in a sandbox runs under the guard program
// (exec_guard/exec_guard.c): the guard is a child subreaper inside the sandbox, so
// whatever the exec starts, however it forks (double fork, setsid), stays below it, and
// on the exec's timeout it kills all of it (its own unreaped children only: no PID
// number is signalled that could have been reused) and ends with SIGKILL. The same
// mechanism works for crun and for runsc, where the processes live in gVisor's kernel.
//
// The guard's bytes are part of this library; the driver writes them to
// <data>/helpers/exec-guard (mode 0555) and bind-mounts that read-only, nosuid, nodev at
// /dev/.sandboxd-exec-guard in every sandbox (inside /dev, a tmpfs of the runtime, so
// nothing is added to the sandbox's layer).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace sandboxd::runtime {

inline constexpr const char* k_exec_guard_in_sandbox = "/dev/.sandboxd-exec-guard";

// Writes the guard to `path` (mode 0555) unless the same bytes are there already.
// Throws std::system_error when it cannot.
void install_exec_guard(const std::string& path);

// The argv that runs `argv` under the guard with `timeout` (0: none).
std::vector<std::string> guarded_argv(const std::vector<std::string>& argv,
                                      std::chrono::milliseconds timeout);

} // namespace sandboxd::runtime
