/* guard.c — see guard.h. */
#define _GNU_SOURCE
#include "guard.h"

#include "builtins.h"
#include "tree.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static void record(const struct guard_spec* g, int32_t kind, int32_t value) {
  if (g->status_fd < 0)
    return;
  struct guard_record r = {g->id, kind, value};
  while (write(g->status_fd, &r, sizeof r) < 0 && errno == EINTR) {
  }
}

static void close_from(int first) {
  if (syscall(SYS_close_range, (unsigned)first, ~0u, 0) == 0)
    return;
  for (int fd = first; fd < 65536; ++fd)
    close(fd);
}

/* In the program's process: its descriptors, directory, signals and environment, then the
 * program. Never returns. */
static void become_program(const struct guard_spec* g, const sigset_t* old) {
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, old != NULL ? old : &none, NULL);
  if (g->in_fd >= 0)
    dup2(g->in_fd, 0);
  if (g->out_fd >= 0)
    dup2(g->out_fd, 1);
  if (g->err_fd >= 0)
    dup2(g->err_fd, 2);
  close_from(3);
  if (g->pty && (setsid() < 0 || ioctl(0, TIOCSCTTY, 0) < 0)) {
    fprintf(stderr, "cannot take the terminal: %s\n", strerror(errno));
    _exit(126);
  }
  if (g->cwd != NULL && chdir(g->cwd) != 0) {
    fprintf(stderr, "cannot change to the working directory %s: %s\n", g->cwd, strerror(errno));
    _exit(126);
  }
  if (g->set_user &&
      (setgroups((size_t)g->ngroups, (const gid_t*)g->groups) != 0 ||
       setresgid(g->gid, g->gid, g->gid) != 0 || setresuid(g->uid, g->uid, g->uid) != 0)) {
    fprintf(stderr, "cannot run as the exec's user: %s\n", strerror(errno));
    _exit(126);
  }
  if (g->envp != NULL)
    environ = g->envp;
  if (g->builtin != 0) {
    int argc = 0;
    while (g->argv[argc] != NULL)
      ++argc;
    _exit(builtin_run(g->builtin, argc - 1, g->argv + 1));
  }
  execvp(g->argv[0], g->argv);
  fprintf(stderr, "%s: %s\n", g->argv[0], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

int guard_run(const struct guard_spec* g, int* timed_out) {
  *timed_out = 0;
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  /* Should its process group ever be orphaned with a stopped member, the kernel sends it
   * SIGHUP: the guard lives on to report; its program gets every signal at its default. */
  signal(SIGHUP, SIG_IGN);
  /* Waited for synchronously (sigwaitinfo): none is lost between a check and the wait. */
  sigset_t wanted, old;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, SIGALRM);
  sigaddset(&wanted, SIGTERM);
  sigprocmask(SIG_BLOCK, &wanted, &old);

  pid_t child = fork();
  if (child < 0)
    return -1;
  if (child == 0)
    become_program(g, g->status_fd >= 0 ? NULL : &old);
  /* The program's ends of its pipes are its own: the guard holds none of them open. */
  const int own[3] = {g->in_fd, g->out_fd, g->err_fd};
  for (int i = 0; i < 3; ++i)
    if (own[i] > 2)
      close(own[i]);
  record(g, GUARD_STARTED, (int32_t)child);
  if (g->timeout_ms > 0) {
    struct itimerval t;
    memset(&t, 0, sizeof t);
    t.it_value.tv_sec = g->timeout_ms / 1000;
    t.it_value.tv_usec = (g->timeout_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &t, NULL);
  }
  for (;;) {
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0)
      if (p == child) {
        record(g, GUARD_EXITED, (int32_t)status);
        return status;
      } /* else an orphan that ended: reaped */
    siginfo_t info;
    int sig = sigwaitinfo(&wanted, &info);
    if (sig == SIGALRM || sig == SIGTERM) {
      tree_end_children();
      *timed_out = 1;
      record(g, GUARD_TIMED_OUT, 0);
      return SIGKILL; /* the wait status of a process SIGKILL ended */
    }
  }
}
