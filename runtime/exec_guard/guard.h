/* guard.h — the guard of one exec: a child subreaper that runs the exec's program as its
 * child and waits for it. Whatever the program starts, however it forks (double fork,
 * setsid), stays below the guard: an orphan is re-parented to the nearest subreaper. When
 * the program ends, the guard reports its wait status at once; processes it left running
 * in the background are then re-parented to the sandbox's init and live on.
 *
 * At the timeout (or on SIGTERM) the guard kills everything the program started: its own
 * children with SIGKILL, reaped, repeated until none is left (tree_end_children), and
 * reports the exec as timed out.
 *
 * The guard runs in a child the agent forks for a file change (agent.c; an exec's guard shares
 * the agent's memory instead, vm_guard.h, where the platform allows it) and, for the
 * `crun exec` and `runsc exec` fallback, as the program `sandboxd-exec-guard <ms> -- argv`
 * (main.c). */
#ifndef SANDBOXD_GUARD_H
#define SANDBOXD_GUARD_H

#include <stdint.h>

struct guard_spec {
  char** argv;     /* argv[0] looked up in the PATH of `envp` when it has no '/' */
  char** envp;     /* NULL: the guard's own environment */
  const char* cwd; /* NULL: the guard's own */
  int in_fd;       /* the program's stdin, stdout, stderr; -1: the guard's own */
  int out_fd;
  int err_fd;
  long timeout_ms; /* 0: none */
  int builtin;     /* SBA_BUILTIN_* (agent_wire.h): runs that instead of argv[0], on argv[1..] */
  int status_fd;   /* -1, or a pipe that gets the guard's records (below) */
  uint32_t id;     /* names the exec in each record */
  /* The user the program runs as (set_user 0: the guard's own, root). The program's process
   * sets its groups, then its gid, then its uid, after its working directory and before its
   * execve; a uid other than 0 leaves it no capability. */
  int set_user;
  uint32_t uid;
  uint32_t gid;
  int ngroups;
  const uint32_t* groups;
  /* 1: in_fd is a terminal: the program starts a session of its own and takes it as its
   * controlling terminal. */
  int pty;
};

/* Records written to status_fd, one write each (atomic: many guards share one pipe). */
struct guard_record {
  uint32_t id; /* guard_spec::id */
  int32_t kind;
  int32_t value;
};
#define GUARD_STARTED 1   /* value: the program's pid */
#define GUARD_EXITED 2    /* value: the program's wait status */
#define GUARD_TIMED_OUT 3 /* value: 0; the tree was killed */

/* Runs the exec and waits; the program's wait status (SIGKILL's when it timed out, with
 * *timed_out set). Returns -1 with errno when the program's process could not be made. */
int guard_run(const struct guard_spec* spec, int* timed_out);

#endif
