/* vm_guard.c — see vm_guard.h. Everything below vm_guard_start runs in the guard or in the
 * program's process before its execve, beside the agent's thread: raw system calls only. */
#define _GNU_SOURCE
#include "vm_guard.h"

#include "raw_syscall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

extern char** environ;

#define PAGE 4096u
#define PROGRAM_STACK (64u << 10) /* a PATH search's name, a script's argv */
#define GUARD_STACK (32u << 10)   /* a /proc listing */
/* One mapping per slot, kept: [no access][program's stack][no access][guard's stack]. */
#define MAP_BYTES (PAGE + PROGRAM_STACK + PAGE + GUARD_STACK)
#define SCRIPT_ARGS 1024 /* a script without #! runs under /bin/sh with at most these */
#define IDLE_MAX 2       /* idle guards kept: more exit when their exec ends */

/* A slot's state is its futex word. FREE -> BUSY: the agent made a guard for an exec;
 * BUSY -> IDLE: the guard ended its exec and waits for the next; IDLE -> BUSY: the agent
 * handed it one; BUSY or IDLE -> FREE: the agent reaped the guard. */
enum { SLOT_FREE = 0, SLOT_BUSY = 1, SLOT_IDLE = 2 };

struct slot {
  int state;
  pid_t pid; /* the guard's, unless FREE */
  unsigned char* map;
  struct guard_spec spec; /* the exec it runs, or ran last (spec.id names it) */
  void* owned;            /* kept until the guard is reaped or handed the next exec */
};

static struct slot slots[VM_GUARD_MAX];

#if RAW_SYSCALL_SUPPORTED
/* clone(flags) onto a new stack: the child calls fn(arg) there and exits with its result;
 * the caller gets the child's PID or -errno. */
long sbx_raw_clone(int (*fn)(void*), void* stack_top, unsigned long flags, void* arg);
__asm__(".text\n"
        ".globl sbx_raw_clone\n"
        ".type sbx_raw_clone,@function\n"
        "sbx_raw_clone:\n"
        "  and $-16, %rsi\n"
        "  sub $8, %rsi\n"
        "  mov %rcx, (%rsi)\n" /* arg, for the child to pop */
        "  mov %rdi, %r9\n"    /* fn */
        "  mov %rdx, %rdi\n"   /* flags */
        "  xor %edx, %edx\n"   /* parent_tid */
        "  xor %r10d, %r10d\n" /* child_tid */
        "  xor %r8d, %r8d\n"   /* tls */
        "  mov $56, %eax\n"    /* SYS_clone */
        "  syscall\n"
        "  test %rax, %rax\n"
        "  jnz 1f\n"
        "  xor %ebp, %ebp\n"
        "  pop %rdi\n"
        "  call *%r9\n"
        "  mov %eax, %edi\n"
        "  mov $60, %eax\n" /* SYS_exit */
        "  syscall\n"
        "  hlt\n"
        "1:\n"
        "  ret\n"
        ".size sbx_raw_clone, .-sbx_raw_clone\n");
#else
static long sbx_raw_clone(int (*fn)(void*), void* stack_top, unsigned long flags, void* arg) {
  (void)fn, (void)stack_top, (void)flags, (void)arg;
  return -ENOSYS;
}
#endif

static unsigned long sig_bit(int sig) {
  return 1ul << (sig - 1);
}

/* The kernel's struct sigaction (x86-64); SIG_DFL and SIG_IGN need no restorer. */
struct k_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)(void);
  unsigned long mask;
};

static void set_action(int sig, void (*how)(int)) {
  struct k_sigaction a = {how, 0, NULL, 0};
  raw_syscall4(SYS_rt_sigaction, sig, &a, NULL, sizeof(unsigned long));
}

static void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    long w = raw_syscall3(SYS_write, fd, p, n);
    if (w == -EINTR)
      continue;
    if (w <= 0)
      return;
    p += w;
    n -= (size_t)w;
  }
}

static const char* errno_text(int e) {
  const char* t = strerrordesc_np(e);
  return t != NULL ? t : "unknown error";
}

/* Writes the NULL-terminated pieces to `fd` as one line (at most 1 KiB). */
static void say(int fd, const char* const* pieces) {
  char line[1024];
  size_t n = 0;
  for (; *pieces != NULL; ++pieces)
    for (const char* p = *pieces; *p != 0 && n < sizeof line - 1; ++p)
      line[n++] = *p;
  line[n++] = '\n';
  write_all(fd, line, n);
}

static void put_record(int fd, const struct guard_record* r) {
  while (raw_syscall3(SYS_write, fd, r, sizeof *r) == -EINTR) {
  }
}

static void close_range_raw(unsigned first, unsigned last) {
  if (first > last)
    return;
  if (raw_syscall3(SYS_close_range, first, last, 0) != -ENOSYS)
    return;
  for (unsigned fd = first; fd <= last && fd < 65536; ++fd)
    raw_syscall1(SYS_close, fd);
}

static int execve_raw(const char* path, char* const* argv, char* const* envp) {
  return (int)-raw_syscall3(SYS_execve, path, argv, envp);
}

/* execve, and for a file the kernel cannot run (no #!) /bin/sh with it, as execvp does;
 * the error when neither ran. */
static int execve_or_script(const char* path, char* const* argv, char* const* envp) {
  int e = execve_raw(path, argv, envp);
  if (e != ENOEXEC)
    return e;
  size_t argc = 0;
  while (argv[argc] != NULL)
    ++argc;
  if (argc + 2 > SCRIPT_ARGS)
    return ENOEXEC;
  char* script[SCRIPT_ARGS];
  script[0] = (char*)"/bin/sh";
  script[1] = (char*)path;
  for (size_t i = 1; i <= argc; ++i)
    script[i + 1] = argv[i];
  execve_raw(script[0], script, envp);
  return ENOEXEC;
}

static const char* env_value(char* const* envp, const char* name, size_t len) {
  for (; envp != NULL && *envp != NULL; ++envp)
    if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
      return *envp + len + 1;
  return NULL;
}

/* Runs argv[0], looked up in envp's PATH when it has no '/' (execvp's rules: an empty
 * element is the working directory; EACCES is remembered and the search goes on, as after
 * ENOENT, ENOTDIR, ESTALE, ENODEV, ETIMEDOUT; another error ends it). Returns the error. */
static int exec_search(char* const* argv, char* const* envp) {
  const char* file = argv[0];
  if (file[0] == 0)
    return ENOENT;
  if (strchr(file, '/') != NULL)
    return execve_or_script(file, argv, envp);
  const size_t file_len = strnlen(file, NAME_MAX + 1);
  if (file_len > NAME_MAX)
    return ENAMETOOLONG;
  const char* path = env_value(envp, "PATH", 4);
  if (path == NULL)
    path = "/bin:/usr/bin";
  char name[PATH_MAX + NAME_MAX + 2];
  int eacces = 0, last = ENOENT;
  for (const char* p = path;; ++p) {
    const char* end = strchrnul(p, ':');
    const size_t dir_len = (size_t)(end - p);
    if (dir_len < PATH_MAX) {
      memcpy(name, p, dir_len);
      size_t n = dir_len;
      if (n > 0)
        name[n++] = '/';
      memcpy(name + n, file, file_len);
      name[n + file_len] = 0;
      last = execve_or_script(name, argv, envp);
      switch (last) {
      case EACCES:
        eacces = 1;
        break;
      case ENOENT:
      case ESTALE:
      case ENOTDIR:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        return last;
      }
    }
    if (*end == 0)
      break;
    p = end;
  }
  return eacces ? EACCES : last;
}

/* The program's process (clone(CLONE_VM | CLONE_VFORK) of the guard, which waits): its
 * descriptors, signals, directory, then the program. Returns only when it could not run it. */
static int program_main(void* arg) {
  const struct guard_spec* g = arg;
  set_action(SIGPIPE, SIG_DFL);
  set_action(SIGHUP, SIG_DFL);
  unsigned long none = 0;
  raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof none);
  const int fds[3] = {g->in_fd, g->out_fd, g->err_fd};
  for (int i = 0; i < 3; ++i)
    if (fds[i] >= 0 && fds[i] != i)
      raw_syscall3(SYS_dup3, fds[i], i, 0);
  close_range_raw(3, ~0u);
  if (g->pty && (raw_syscall0(SYS_setsid) < 0 || raw_syscall3(SYS_ioctl, 0, TIOCSCTTY, 0) < 0)) {
    const char* why[] = {"cannot take the terminal", NULL};
    say(2, why);
    return 126;
  }
  if (g->cwd != NULL) {
    long r = raw_syscall1(SYS_chdir, g->cwd);
    if (r < 0) {
      const char* why[] = {"cannot change to the working directory ", g->cwd, ": ",
                           errno_text((int)-r), NULL};
      say(2, why);
      return 126;
    }
  }
  if (g->set_user) {
    /* Groups, then gid, then uid: once the uid is not 0 the rest would be refused. setresuid
     * away from 0 clears the permitted and effective capabilities. Raw: they change this
     * process alone, never the agent's threads. */
    long r = raw_syscall2(SYS_setgroups, g->ngroups, g->groups);
    if (r == 0)
      r = raw_syscall3(SYS_setresgid, g->gid, g->gid, g->gid);
    if (r == 0)
      r = raw_syscall3(SYS_setresuid, g->uid, g->uid, g->uid);
    if (r < 0) {
      const char* why[] = {"cannot run as the exec's user: ", errno_text((int)-r), NULL};
      say(2, why);
      return 126;
    }
  }
  int e = exec_search(g->argv, g->envp != NULL ? g->envp : environ);
  const char* why[] = {g->argv[0], ": ", errno_text(e), NULL};
  say(2, why);
  return e == ENOENT ? 127 : 126;
}

/* The children of this process (found in /proc) get SIGKILL. */
static void kill_children(long self) {
  long dir = raw_syscall4(SYS_openat, AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0)
    return;
  struct dirent64_raw {
    uint64_t ino;
    int64_t off;
    uint16_t reclen;
    uint8_t type;
    char name[];
  };
  _Alignas(8) char listing[4096];
  for (;;) {
    long n = raw_syscall3(SYS_getdents64, dir, listing, sizeof listing);
    if (n <= 0)
      break;
    for (long at = 0; at < n;) {
      const struct dirent64_raw* d = (const struct dirent64_raw*)(listing + at);
      at += d->reclen;
      long pid = 0;
      const char* c = d->name;
      for (; *c >= '0' && *c <= '9' && pid < (1l << 30); ++c)
        pid = pid * 10 + (*c - '0');
      if (*c != 0 || pid <= 0)
        continue;
      char stat_path[32];
      size_t len = (size_t)(c - d->name);
      if (len > 16)
        continue;
      memcpy(stat_path, d->name, len);
      memcpy(stat_path + len, "/stat", 6);
      long fd = raw_syscall4(SYS_openat, dir, stat_path, O_RDONLY | O_CLOEXEC, 0);
      if (fd < 0)
        continue;
      char stat[1024];
      long got = raw_syscall3(SYS_read, fd, stat, sizeof stat - 1);
      raw_syscall1(SYS_close, fd);
      if (got <= 0)
        continue;
      stat[got] = 0;
      /* "pid (name) state ppid ...": the name may hold anything, so from its last ')'. */
      const char* p = strrchr(stat, ')');
      if (p == NULL || p[1] != ' ' || p[2] == 0 || p[3] != ' ')
        continue;
      long ppid = 0;
      for (p += 4; *p >= '0' && *p <= '9'; ++p)
        ppid = ppid * 10 + (*p - '0');
      if (ppid == self)
        raw_syscall2(SYS_kill, pid, SIGKILL);
    }
  }
  raw_syscall1(SYS_close, dir);
}

/* SIGKILL to this process's children until it has none left, reaping them (orphans of the
 * killed come here, the guard being a subreaper): guard.c's tree_end_children. */
static void end_children(void) {
  const long self = raw_syscall0(SYS_getpid);
  for (;;) {
    kill_children(self);
    int status;
    long p;
    while ((p = raw_syscall4(SYS_wait4, -1, &status, WNOHANG, NULL)) > 0) {
    }
    if (p == -ECHILD)
      return;
    struct timespec ms = {0, 1000000};
    raw_syscall2(SYS_nanosleep, &ms, NULL);
  }
}

static int load_state(const struct slot* s) {
  return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static int idle_guards(void) {
  int n = 0;
  for (int i = 0; i < VM_GUARD_MAX; ++i)
    n += load_state(&slots[i]) == SLOT_IDLE;
  return n;
}

/* libc's clock_gettime reads the vDSO: no system call, no state (CLOCK_MONOTONIC never fails,
 * so errno is never written). */
static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A guard: runs the exec in its slot, then, when nothing of it is left below the guard and
 * fewer than IDLE_MAX guards wait, waits for the next (vm_guard_start hands it one). A guard
 * that ran into its exec's timeout, or whose program left processes running, ends: those
 * go to the agent, the sandbox's init, as guard.h says. */
static int guard_main(void* arg) {
  struct slot* s = arg;
  raw_syscall2(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1);
  /* A process group of its own (a `kill 0` in one exec reaches only that exec), in the
   * agent's session, so never orphaned (agent.c says why that matters). */
  raw_syscall2(SYS_setpgid, 0, 0);
  set_action(SIGHUP, SIG_IGN);
  unsigned long wanted = sig_bit(SIGCHLD) | sig_bit(SIGTERM);
  raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, &wanted, NULL, sizeof wanted);
  for (;;) {
    /* The agent hands out the next exec once this one is idle: work on a copy. */
    const struct guard_spec g = s->spec;
    int reusable = 0;
    struct guard_record r = {g.id, GUARD_EXITED, 126 << 8};
    const long child =
      sbx_raw_clone(program_main, s->map + PAGE + PROGRAM_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD,
                    (void*)&g);
    if (child < 0) {
      const char* why[] = {"cannot start the program: ", errno_text((int)-child), NULL};
      say(g.err_fd, why);
      reusable = 1;
    } else {
      struct guard_record started = {g.id, GUARD_STARTED, (int32_t)child};
      put_record(g.status_fd, &started);
      const int64_t deadline = g.timeout_ms > 0 ? now_ns() + (int64_t)g.timeout_ms * 1000000 : 0;
      for (;;) {
        int status;
        long p;
        while ((p = raw_syscall4(SYS_wait4, -1, &status, WNOHANG, NULL)) > 0 && p != child) {
        } /* an orphan that ended: reaped */
        if (p == child) {
          r.value = status;
          reusable = raw_syscall4(SYS_wait4, -1, &status, WNOHANG, NULL) == -ECHILD;
          break;
        }
        struct timespec left, *wait = NULL;
        if (deadline != 0) {
          const int64_t ns = deadline - now_ns();
          if (ns <= 0)
            goto timed_out;
          left.tv_sec = ns / 1000000000;
          left.tv_nsec = ns % 1000000000;
          wait = &left;
        }
        siginfo_t info;
        if (raw_syscall4(SYS_rt_sigtimedwait, &wanted, &info, wait, sizeof wanted) == SIGTERM)
          goto timed_out;
        continue;
      timed_out:
        end_children();
        r.kind = GUARD_TIMED_OUT;
        r.value = 0;
        break;
      }
    }
    put_record(g.status_fd, &r);
    if (!reusable || idle_guards() >= IDLE_MAX)
      return 0; /* what the program left running goes to the agent, the sandbox's init */
    __atomic_store_n(&s->state, SLOT_IDLE, __ATOMIC_RELEASE);
    while (load_state(s) == SLOT_IDLE)
      raw_syscall4(SYS_futex, &s->state, FUTEX_WAIT_PRIVATE, SLOT_IDLE, NULL);
    /* A SIGTERM sent while idle was meant for no exec of this guard's: dropped. */
    const unsigned long term = sig_bit(SIGTERM);
    struct timespec now = {0, 0};
    siginfo_t info;
    raw_syscall4(SYS_rt_sigtimedwait, &term, &info, &now, sizeof term);
  }
}

static int make_stacks(struct slot* s) {
  if (s->map != NULL)
    return 0;
  void* m = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return -errno;
  unsigned char* b = m;
  if (mprotect(b, PAGE, PROT_NONE) != 0 || mprotect(b + PAGE + PROGRAM_STACK, PAGE, PROT_NONE) != 0) {
    int e = errno;
    munmap(m, MAP_BYTES);
    return -e;
  }
  s->map = b;
  return 0;
}

pid_t vm_guard_start(const struct guard_spec* spec, void* owned, void** released) {
  *released = NULL;
  if (!RAW_SYSCALL_SUPPORTED || spec->builtin != 0 || spec->status_fd < 3)
    return -ENOSYS;
  struct slot* idle = NULL;
  struct slot* free_slot = NULL;
  for (int i = 0; i < VM_GUARD_MAX && idle == NULL; ++i) {
    const int st = load_state(&slots[i]);
    if (st == SLOT_IDLE)
      idle = &slots[i];
    else if (st == SLOT_FREE && free_slot == NULL)
      free_slot = &slots[i];
  }
  if (idle != NULL) {
    /* It is done with the last exec's strings. */
    *released = idle->owned;
    idle->spec = *spec;
    idle->owned = owned;
    __atomic_store_n(&idle->state, SLOT_BUSY, __ATOMIC_RELEASE);
    raw_syscall3(SYS_futex, &idle->state, FUTEX_WAKE_PRIVATE, 1);
    /* Code in the sandbox may have stopped it while it waited (`kill -STOP -1`): the exec
     * would never start. */
    kill(idle->pid, SIGCONT);
    return idle->pid;
  }
  if (free_slot == NULL)
    return -EAGAIN;
  struct slot* s = free_slot;
  const int e = make_stacks(s);
  if (e != 0)
    return e;
  s->spec = *spec;
  s->owned = owned;
  s->state = SLOT_BUSY;
  /* CLONE_FILES: the guard holds no descriptor of its own (the agent's close of a pipe end
   * is its last); its program gets a copy of the table and keeps only its three. */
  const long pid =
    sbx_raw_clone(guard_main, s->map + MAP_BYTES, CLONE_VM | CLONE_FILES | SIGCHLD, s);
  if (pid < 0) {
    s->state = SLOT_FREE;
    s->owned = NULL;
    return (pid_t)pid;
  }
  /* Reaped only by the caller's thread, after this. */
  s->pid = (pid_t)pid;
  return (pid_t)pid;
}

int vm_guard_reaped(pid_t pid, void** owned) {
  for (int i = 0; i < VM_GUARD_MAX; ++i)
    if (pid > 0 && slots[i].pid == pid && load_state(&slots[i]) != SLOT_FREE) {
      *owned = slots[i].owned;
      slots[i].owned = NULL;
      slots[i].pid = 0;
      __atomic_store_n(&slots[i].state, SLOT_FREE, __ATOMIC_RELEASE);
      return 1;
    }
  return 0;
}

int vm_guard_runs(pid_t pid, uint32_t id) {
  for (int i = 0; i < VM_GUARD_MAX; ++i)
    if (pid > 0 && slots[i].pid == pid && load_state(&slots[i]) != SLOT_FREE)
      return slots[i].spec.id == id && load_state(&slots[i]) == SLOT_BUSY;
  return 1; /* a forked guard runs one exec only */
}
