/* vm_guard.h — an exec's guard (guard.h's contract) in the agent's own address space.
 *
 * A forked guard costs two new address spaces per exec before the program's own (the
 * guard's copy of the agent, the program's copy of the guard), and every page either side
 * writes after a fork is a copy-on-write fault. Under gVisor's systrap platform each new
 * address space is a new host stub process and each fault a trip into gVisor's kernel: at
 * load, tens of milliseconds per exec (docs/performance.md, "Exec through the agent"). This
 * guard is made with clone(CLONE_VM): a process of its own — its own PID, the program's
 * parent, child subreaper of everything the program starts, its own process group, timer
 * and signal mask — that shares the agent's memory; it starts the program with
 * clone(CLONE_VM | CLONE_VFORK), as posix_spawn does, so the program's execve makes the
 * exec's only address space. Making a process is dear there too (a host thread for it), so
 * a guard whose program ended with nothing left below it waits for the next exec instead of
 * exiting (at most two wait); one that ran into its timeout, or below which processes still
 * run, exits as guard.h's does, and those go to the agent, the sandbox's init.
 *
 * The guard and the program's process before its execve run beside the agent's thread in
 * the same memory, so they use nothing of libc that has state: raw system calls
 * (raw_syscall.h; errno is the agent's), no malloc, no stdio. Each runs on a stack of its own
 * (kept per slot, below, and reused: no fault after the first use). The spec's strings and
 * arrays must stay valid and unchanged until the guard is reaped (vm_guard_reaped).
 *
 * A guard shares the agent's descriptor table (CLONE_FILES): it holds no descriptor of its
 * own, so the agent's close of a pipe end is the last. The program's process gets a copy of
 * the table and keeps only the spec's descriptors, as 0, 1 and 2: the agent must keep them
 * open until the guard's GUARD_STARTED record (or the exec's end). The program's signal mask
 * is empty and every signal has its default action (the agent ignores only SIGPIPE, the
 * guard SIGHUP). The guard writes its records to spec->status_fd (guard_record). Where the
 * program cannot be run, its process writes why to its stderr and exits 127 (not found) or
 * 126, as guard.h's does. */
#ifndef SANDBOXD_VM_GUARD_H
#define SANDBOXD_VM_GUARD_H

#include "guard.h"

#include <stdint.h>
#include <sys/types.h>

/* Guards (running or not yet reaped) at once, at most. */
#define VM_GUARD_MAX 256

/* Runs `spec` (spec->builtin must be 0) on an idle guard, or a new one; the guard's PID, or
 * -errno: -ENOSYS where this platform has no raw system calls (run the forked guard
 * instead), -EAGAIN when VM_GUARD_MAX guards are busy or unreaped, else clone's or mmap's
 * error. `owned` (the spec's strings) is kept while the guard may read it; *released is what
 * an earlier call gave that is no longer read (or NULL), for the caller to free. */
pid_t vm_guard_start(const struct guard_spec* spec, void* owned, void** released);

/* `pid` was reaped: when it was a guard of this file, its slot is free again and *owned is
 * what vm_guard_start was given last (1); else 0. */
int vm_guard_reaped(pid_t pid, void** owned);

/* Whether guard `pid` still runs the exec whose records carry `id` (it may have ended it and
 * waits for, or runs, another: signalling it then reaches another exec). 1 for a pid that is
 * not a guard of this file (a forked guard runs one exec). */
int vm_guard_runs(pid_t pid, uint32_t id);

#endif
