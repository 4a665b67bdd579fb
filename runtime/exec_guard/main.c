/* sandboxd-exec-guard — sandboxd's own static program inside every sandbox (crun and runsc
 * alike), bound read-only at /dev/.sandboxd-exec-guard (runtime/exec_guard.hpp). Modes:
 *
 *   sandboxd-exec-guard --agent <socket>
 *       The sandbox's first process: the agent (agent.h). It connects to the host at
 *       <socket> and runs execs and file changes on request.
 *
 *   sandboxd-exec-guard <timeout in ms, 0 for none> -- program [args...]
 *       One exec under the guard (guard.h), for execs made by the runtime (`crun exec`,
 *       `runsc exec`) where the agent does not run: exits with the program's status, or
 *       ends itself by the signal that ended the program.
 *
 *   sandboxd-exec-guard --write <absolute path> <octal mode>   (content on stdin)
 *   sandboxd-exec-guard --mkdir <absolute path> <octal mode> <p: with parents | ->
 *   sandboxd-exec-guard --remove <absolute path> <r: recursive | ->
 *   sandboxd-exec-guard --rename <absolute path> <absolute path>
 *       A file change as the sandbox's root (builtins.h); the agent does the same on
 *       request.
 *
 * Static, built with the project, no sanitizer. */
#define _GNU_SOURCE
#include "agent.h"
#include "agent_wire.h"
#include "builtins.h"
#include "guard.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--agent") == 0)
    return agent_main(argv[2]);
  if (argc == 4 && strcmp(argv[1], "--write") == 0)
    return builtin_run(SBA_BUILTIN_WRITE, 2, argv + 2);
  if (argc == 5 && strcmp(argv[1], "--mkdir") == 0)
    return builtin_run(SBA_BUILTIN_MKDIR, 3, argv + 2);
  if (argc == 4 && strcmp(argv[1], "--remove") == 0)
    return builtin_run(SBA_BUILTIN_REMOVE, 2, argv + 2);
  if (argc == 4 && strcmp(argv[1], "--rename") == 0)
    return builtin_run(SBA_BUILTIN_RENAME, 2, argv + 2);
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: %s <timeout-ms> -- program [args...] | --agent <socket>\n", argv[0]);
    return 125;
  }
  struct guard_spec g = {argv + 3, NULL, NULL, -1, -1, -1, strtol(argv[1], NULL, 10), 0, -1, 0};
  int timed_out = 0;
  int status = guard_run(&g, &timed_out);
  if (status < 0) {
    perror("sandboxd-exec-guard: fork");
    return 126;
  }
  if (timed_out) {
    kill(getpid(), SIGKILL);
    return 137;
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    kill(getpid(), sig);
    return 128 + sig;
  }
  return WEXITSTATUS(status);
}
