/* raw_syscall.h — system calls without libc, for code that runs in the agent's address space
 * beside its thread (vm_guard.h): such code may not touch errno (it lives in the agent's
 * thread-local storage, which a clone(CLONE_VM) child shares), malloc or stdio. Each call
 * returns what the kernel returned: a result, or -errno.
 *
 * x86-64 only (RAW_SYSCALL_SUPPORTED); elsewhere the agent runs every exec under the forked
 * guard (guard.h). */
#ifndef SANDBOXD_RAW_SYSCALL_H
#define SANDBOXD_RAW_SYSCALL_H

#if defined(__x86_64__)
#define RAW_SYSCALL_SUPPORTED 1

static inline long raw_syscall6(long n, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

#else
#define RAW_SYSCALL_SUPPORTED 0

static inline long raw_syscall6(long n, long a, long b, long c, long d, long e, long f) {
  (void)n, (void)a, (void)b, (void)c, (void)d, (void)e, (void)f;
  return -38; /* ENOSYS */
}

#endif

#define raw_syscall0(n) raw_syscall6((n), 0, 0, 0, 0, 0, 0)
#define raw_syscall1(n, a) raw_syscall6((n), (long)(a), 0, 0, 0, 0, 0)
#define raw_syscall2(n, a, b) raw_syscall6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define raw_syscall3(n, a, b, c) raw_syscall6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define raw_syscall4(n, a, b, c, d)                                                                \
  raw_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

#endif
