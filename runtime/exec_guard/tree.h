/* tree.h — processes below a process, as the sandbox's own /proc shows them (the same code
 * under crun and in gVisor's kernel). A process is below `root` when its chain of parents
 * reaches `root`; `root` itself is never signalled. Every signal goes through a pidfd taken
 * before the process's start time is checked again, so a PID number reused meanwhile for
 * another process is not hit (kill(2) only where pidfds are missing). */
#ifndef SANDBOXD_TREE_H
#define SANDBOXD_TREE_H

#include <sys/types.h>

/* Sends `sig` to every process below `root` as the tree stands now (sig 0: only counts
 * them); how many there were. */
int tree_signal(pid_t root, int sig);

/* Stops every process below `root` until the tree stops growing (a process forked between
 * a look and a stop is found in the next look), then kills each with SIGKILL; how many. */
int tree_kill(pid_t root);

/* SIGKILL to this process's own children until it has none left, reaping them (orphans of
 * the killed are re-parented here, this process being a subreaper). Only unreaped children
 * are signalled: no PID can have been reused. */
void tree_end_children(void);

#endif
