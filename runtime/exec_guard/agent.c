/* agent.c — see agent.h. One thread, one poll loop; no call in it blocks but the /proc
 * walks of a signal request. */
#define _GNU_SOURCE
#include "agent.h"

#include "agent_wire.h"
#include "guard.h"
#include "tree.h"
#include "vm_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EXECS 200 /* three descriptors each (six until started), under RLIMIT_NOFILE 1024 */
#define OUT_HIGH (2u << 20)     /* pipes are not read while more waits for the socket */
#define DRAIN_BUDGET (1u << 20) /* read per stream after the program's end, at most */
#define BACKSTOP_MS 5000        /* after the timeout, should the guard not report */
#define STDIN_CREDIT_BATCH (64u << 10)

struct exec {
  int used;
  uint32_t id;     /* the stream */
  uint32_t serial; /* the guard's records name it: unique in this agent's life (a stream id
                      is not: each connection counts from 1) */
  pid_t guard;     /* unreaped while > 0 */
  int guard_ended; /* reaped (status in guard_status) */
  int guard_status;
  int fd_out[2], fd_in; /* -1 once closed; fd_out[0] stdout, [1] stderr */
  int fd_program[3];     /* the program's ends, held until its guard has passed them on */
  int started;                     /* SBA_STARTED was put: output may follow */
  int ended;                       /* the program's end is known (wait_status, timed_out) */
  int wait_status;
  int timed_out;
  uint64_t credit;
  uint64_t max_output; /* 0: none */
  uint64_t seen[2];
  uint64_t drained[2];     /* read since the end */
  int64_t rest_until[2];   /* monotonic us: the pipe is not polled before */
  int truncated;
  int pty; /* fd_out[0] is a terminal's master */
  char* in_buf; /* SBA_STDIN_WINDOW bytes */
  size_t in_len;
  int in_end, in_broken;
  uint32_t in_uncredited;
  int64_t backstop_at; /* monotonic ms; 0: none */
};

static struct exec execs[MAX_EXECS];
/* Every guard writes its records (guard_record) to one pipe; the agent reads them from
 * records_in. */
static int records_in = -1, records_out = -1;
static uint32_t last_serial = 0;
/* stdin of an exec without one (read-only, as open would give it each time). */
static int dev_null = -1;
static int sock = -1;
static int replaced = 0;
static uint32_t last_stream = 0;
static int64_t reconnect_at = 0;
static int64_t backoff_ms = 10;
static const char* socket_path;

static unsigned char* inbuf;
static size_t in_off = 0, in_len = 0;
#define IN_CAP (SBA_HEADER_BYTES + SBA_MAX_BODY)

static unsigned char* out = NULL;
static size_t out_len = 0, out_sent = 0, out_cap = 0;
/* The last frame put, which more output of the same stream may extend while none of it
 * has been sent: coalescing. An output frame that is the last thing put is held back from
 * the socket while it is smaller than HOLD_BYTES and younger than HOLD_US, so that a program
 * writing fast (8 KiB a write, as busybox's head or cat do) fills a few large frames instead
 * of many small ones (each a wake-up and a hand-off on the host); any frame put after it, the
 * exec's end included, sends it at once, so a command's last output is never delayed. */
static size_t last_off = (size_t)-1;
static uint8_t last_kind = 0;
static uint32_t last_stream_of_frame = 0;
static int64_t last_born_us = 0;
#define HOLD_BYTES (128u << 10)
#define HOLD_US 1000
/* A pipe whose read brought less than REST_BELOW is not read again for REST_US: a program
 * that writes fast in small writes fills the pipe meanwhile instead of waking the agent for
 * each write (busybox's head: one wake-up and one read per 8 KiB). Within the hold above, so
 * it delays no output more than the hold does. */
#define REST_BELOW (64u << 10)
#define REST_US 200

static unsigned char scratch[64 << 10];

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static void put32(unsigned char* p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char* p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* For a pipe end the agent made: no other status flag is set on it. */
static int set_nonblock(int fd) {
  return fcntl(fd, F_SETFL, O_NONBLOCK);
}

static void close_fd(int* fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

/* Room for `n` more bytes at out + out_len; NULL when memory ran out. */
static unsigned char* out_reserve(size_t n) {
  if (out_sent > 0 && out_sent == out_len) {
    out_sent = out_len = 0;
    last_off = (size_t)-1;
  } else if (out_sent > out_cap / 2) {
    memmove(out, out + out_sent, out_len - out_sent);
    if (last_off != (size_t)-1)
      last_off = last_off >= out_sent ? last_off - out_sent : (size_t)-1;
    out_len -= out_sent;
    out_sent = 0;
  }
  if (out_len + n > out_cap) {
    size_t cap = out_cap ? out_cap : (1u << 20);
    while (cap < out_len + n)
      cap *= 2;
    unsigned char* p = realloc(out, cap);
    if (p == NULL)
      return NULL;
    out = p;
    out_cap = cap;
  }
  return out + out_len;
}

static void put_header(unsigned char* h, uint8_t kind, uint32_t stream, uint32_t len) {
  put32(h, len);
  h[4] = kind;
  h[5] = h[6] = h[7] = 0;
  put32(h + 8, stream);
}

static void put_frame(uint8_t kind, uint32_t stream, const void* body, uint32_t len) {
  if (sock < 0)
    return;
  unsigned char* h = out_reserve(SBA_HEADER_BYTES + len);
  if (h == NULL)
    return;
  put_header(h, kind, stream, len);
  if (len > 0)
    memcpy(h + SBA_HEADER_BYTES, body, len);
  last_off = (size_t)-1;
  out_len += SBA_HEADER_BYTES + len;
}

static void put_u32_frame(uint8_t kind, uint32_t stream, uint32_t v) {
  unsigned char b[4];
  put32(b, v);
  put_frame(kind, stream, b, 4);
}

static struct exec* find_exec(uint32_t id) {
  for (int i = 0; i < MAX_EXECS; ++i)
    if (execs[i].used && execs[i].id == id)
      return &execs[i];
  return NULL;
}

static void init_exec(struct exec* e) {
  memset(e, 0, sizeof *e);
  e->fd_out[0] = e->fd_out[1] = e->fd_in = -1;
  e->fd_program[0] = e->fd_program[1] = e->fd_program[2] = -1;
}

static void close_program_ends(struct exec* e) {
  for (int i = 0; i < 3; ++i)
    close_fd(&e->fd_program[i]);
}

static void free_exec(struct exec* e) {
  close_fd(&e->fd_out[0]);
  close_fd(&e->fd_out[1]);
  close_fd(&e->fd_in);
  close_program_ends(e);
  free(e->in_buf);
  /* A guard not reaped yet is reaped by reap_all as any orphan. */
  init_exec(e);
}

/* Whether the exec's guard is still on it: not ended (nor reaped), nor on to another exec. */
static int guard_on(const struct exec* e) {
  return e->guard > 0 && !e->guard_ended && vm_guard_runs(e->guard, e->serial);
}

/* The connection is gone: nothing of an exec in flight can be delivered any more, so each
 * is ended whole; then the agent connects again (unless replaced). */
static void drop_connection(void) {
  if (sock >= 0)
    close(sock);
  sock = -1;
  for (int i = 0; i < MAX_EXECS; ++i) {
    struct exec* e = &execs[i];
    if (!e->used)
      continue;
    if (guard_on(e)) {
      tree_kill(e->guard);
      kill(e->guard, SIGKILL);
    }
    free_exec(e);
  }
  in_off = in_len = 0;
  out_len = out_sent = 0;
  last_off = (size_t)-1;
  last_stream = 0;
  reconnect_at = now_ms() + backoff_ms;
  backoff_ms = backoff_ms * 2 > 500 ? 500 : backoff_ms * 2;
}

static void try_connect(void) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) {
    reconnect_at = now_ms() + backoff_ms;
    return;
  }
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_path);
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
    close(s);
    reconnect_at = now_ms() + backoff_ms;
    backoff_ms = backoff_ms * 2 > 500 ? 500 : backoff_ms * 2;
    return;
  }
  sock = s;
  unsigned char hello[20];
  memcpy(hello, SBA_MAGIC, 8);
  put32(hello + 8, SBA_VERSION);
  put32(hello + 12, (uint32_t)getpid());
  put32(hello + 16, 0);
  put_frame(SBA_HELLO, 0, hello, sizeof hello);
}

/* The spawn body's fields, as NUL-terminated copies in one block. */
struct spawn {
  char** argv;
  char** envp;
  char* cwd;
  long timeout_ms;
  int stdin_pipe;
  uint64_t max_output;
  uint32_t window;
  int builtin;
  int set_user;
  uint32_t uid;
  uint32_t gid;
  int ngroups;
  uint32_t* groups; /* SBA_MAX_GROUPS of them, in block */
  int pty;
  uint16_t cols, rows;
  char* block;
};

static int parse_spawn(const unsigned char* b, uint32_t n, struct spawn* s) {
  memset(s, 0, sizeof *s);
  s->window = 1u << 20;
  size_t args = 0, envs = 0;
  for (uint32_t p = 0; p < n;) {
    if (n - p < 5)
      return -1;
    uint8_t tag = b[p];
    uint32_t len = get32(b + p + 1);
    if (len > n - p - 5)
      return -1;
    args += tag == SBA_ARG;
    envs += tag == SBA_ENV;
    p += 5 + len;
  }
  if (args == 0)
    return -1;
  /* Pointer arrays, then every string with its NUL. */
  size_t size = (args + 1 + envs + 1) * sizeof(char*) + SBA_MAX_GROUPS * sizeof(uint32_t) + n +
                args + envs + 1;
  s->block = calloc(1, size);
  if (s->block == NULL)
    return -1;
  s->argv = (char**)s->block;
  s->envp = s->argv + args + 1;
  s->groups = (uint32_t*)(s->envp + envs + 1);
  char* text = (char*)(s->groups + SBA_MAX_GROUPS);
  size_t ai = 0, ei = 0;
  for (uint32_t p = 0; p < n;) {
    uint8_t tag = b[p];
    uint32_t len = get32(b + p + 1);
    const unsigned char* v = b + p + 5;
    p += 5 + len;
    switch (tag) {
    case SBA_ARG:
    case SBA_ENV:
    case SBA_CWD:
      if (memchr(v, 0, len) != NULL)
        return -1;
      memcpy(text, v, len);
      text[len] = 0;
      if (tag == SBA_ARG)
        s->argv[ai++] = text;
      else if (tag == SBA_ENV)
        s->envp[ei++] = text;
      else
        s->cwd = text;
      text += len + 1;
      break;
    case SBA_TIMEOUT_MS:
      if (len != 8)
        return -1;
      s->timeout_ms = (long)get64(v);
      break;
    case SBA_STDIN_PIPE:
      if (len != 1)
        return -1;
      s->stdin_pipe = v[0] == 1;
      break;
    case SBA_MAX_OUTPUT:
      if (len != 8)
        return -1;
      s->max_output = get64(v);
      break;
    case SBA_WINDOW:
      if (len != 4)
        return -1;
      s->window = get32(v);
      break;
    case SBA_BUILTIN:
      if (len != 1)
        return -1;
      s->builtin = v[0];
      break;
    case SBA_PTY:
      if (len != 4 || s->pty)
        return -1;
      s->pty = 1;
      s->cols = (uint16_t)(v[0] | v[1] << 8);
      s->rows = (uint16_t)(v[2] | v[3] << 8);
      if (s->cols == 0 || s->rows == 0 || s->cols > SBA_MAX_TERMINAL_SIDE ||
          s->rows > SBA_MAX_TERMINAL_SIDE)
        return -1;
      break;
    case SBA_USER:
      if (len < 8 || len % 4 != 0 || (len - 8) / 4 > SBA_MAX_GROUPS || s->set_user)
        return -1;
      s->set_user = 1;
      s->uid = get32(v);
      s->gid = get32(v + 4);
      s->ngroups = (int)((len - 8) / 4);
      for (int i = 0; i < s->ngroups; ++i)
        s->groups[i] = get32(v + 8 + 4 * i);
      break;
    default:
      return -1; /* a field this agent does not know: refused, never half understood */
    }
  }
  if (s->cwd != NULL && s->cwd[0] != '/')
    return -1;
  return 0;
}

static void spawn_failed(uint32_t id, int err, const char* what) {
  unsigned char b[256];
  put32(b, (uint32_t)err);
  size_t n = strlen(what);
  if (n > sizeof b - 4)
    n = sizeof b - 4;
  memcpy(b + 4, what, n);
  put_frame(SBA_FAILED, id, b, (uint32_t)(4 + n));
}

/* Closes every descriptor but the `n` in `keep` (ascending). */
static void close_except(const int* keep, int n) {
  int from = 3;
  for (int i = 0; i < n; ++i) {
    if (keep[i] > from && syscall(SYS_close_range, (unsigned)from, (unsigned)keep[i] - 1, 0) != 0)
      for (int fd = from; fd < keep[i]; ++fd)
        close(fd);
    from = keep[i] + 1;
  }
  if (syscall(SYS_close_range, (unsigned)from, ~0u, 0) != 0)
    for (int fd = from; fd < 65536; ++fd)
      close(fd);
}

static int cmp_int(const void* a, const void* b) {
  return *(const int*)a - *(const int*)b;
}

/* The forked guard of a file change (or of an exec where vm_guard.h cannot run): a child of
 * the agent that runs guard_run with only its own descriptors. Its PID, or -errno. */
static pid_t fork_guard(const struct guard_spec* g) {
  pid_t guard = fork();
  if (guard != 0)
    return guard < 0 ? -errno : guard;
  int keep[4] = {g->in_fd, g->out_fd, g->err_fd, g->status_fd};
  qsort(keep, 4, sizeof keep[0], cmp_int);
  close_except(keep, 4);
  /* A process group of its own (a `kill 0` in one exec reaches only that exec), in the
   * agent's session: its parent, the agent, is in another group of the same session, so
   * the group is never orphaned and the kernel never sends it SIGHUP and SIGCONT (which
   * would undo a stop and end the program). */
  setpgid(0, 0);
  int timed_out;
  if (guard_run(g, &timed_out) < 0) {
    dprintf(g->err_fd, "cannot start the program: %s\n", strerror(errno));
    struct guard_record r = {g->id, GUARD_EXITED, 126 << 8};
    (void)!write(g->status_fd, &r, sizeof r);
  }
  _exit(0);
}

/* A new terminal of the spawn's size: its master (the agent's side, non-blocking later) and
 * the program's side. 0, or -1 with errno. */
static int open_terminal(const struct spawn* s, int* master, int* program) {
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0)
    return -1;
  char name[64];
  struct winsize ws = {s->rows, s->cols, 0, 0};
  int p = -1;
  if (unlockpt(m) == 0 && ptsname_r(m, name, sizeof name) == 0 &&
      ioctl(m, TIOCSWINSZ, &ws) == 0)
    p = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (p < 0) {
    int e = errno;
    close(m);
    errno = e;
    return -1;
  }
  *master = m;
  *program = p;
  return 0;
}

static void start_exec(uint32_t id, const unsigned char* body, uint32_t n) {
  if (id == 0 || id <= last_stream) {
    drop_connection(); /* the host broke the protocol: start afresh */
    return;
  }
  last_stream = id;
  struct spawn s;
  if (parse_spawn(body, n, &s) != 0) {
    free(s.block);
    spawn_failed(id, EINVAL, "malformed spawn request");
    return;
  }
  struct exec* e = NULL;
  for (int i = 0; i < MAX_EXECS && e == NULL; ++i)
    if (!execs[i].used)
      e = &execs[i];
  if (e == NULL) {
    free(s.block);
    spawn_failed(id, EMFILE, "too many execs in flight in this sandbox");
    return;
  }
  /* The program's ends block (as a program expects); the agent's are made non-blocking once
   * the guard runs, off the way to the program's start. */
  int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1};
  int ok;
  if (s.pty) {
    /* A terminal: the agent reads its output from the master (po[0]) and writes its keyboard
     * to a copy of it (pi[1]); the program gets the other side (pi[0]) as 0, 1 and 2. */
    ok = open_terminal(&s, &po[0], &pi[0]) == 0;
    if (ok)
      ok = (pi[1] = fcntl(po[0], F_DUPFD_CLOEXEC, 3)) >= 0;
  } else {
    ok = pipe2(po, O_CLOEXEC) == 0 && pipe2(pe, O_CLOEXEC) == 0;
    if (ok && s.stdin_pipe)
      ok = pipe2(pi, O_CLOEXEC) == 0;
    else if (ok && dev_null < 0)
      ok = (pi[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;
  }
  int err = errno;
  const int in_fd = pi[0] >= 0 ? pi[0] : dev_null;
  const int out_fd = s.pty ? pi[0] : po[1], err_fd = s.pty ? pi[0] : pe[1];
  const int want_stdin = s.stdin_pipe || s.pty;
  char* in_buf = ok && want_stdin ? malloc(SBA_STDIN_WINDOW) : NULL;
  if (ok && want_stdin && in_buf == NULL)
    ok = 0, err = ENOMEM;
  if (!ok) {
    int* all[] = {po, pe, pi};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j)
        if (all[i][j] >= 0)
          close(all[i][j]);
    free(s.block);
    free(in_buf);
    spawn_failed(id, err, "cannot make the exec's pipes");
    return;
  }
  /* Bigger pipes: fewer, larger reads (refused past the user's pipe quota: kept small). */
  if (!s.pty) {
    fcntl(po[1], F_SETPIPE_SZ, 256 << 10);
    fcntl(pe[1], F_SETPIPE_SZ, 256 << 10);
  }
  if (++last_serial == 0)
    last_serial = 1;
  struct guard_spec g = {s.argv,      s.envp,     s.cwd,        in_fd,    out_fd,
                         err_fd,      s.timeout_ms, s.builtin,  records_out, last_serial,
                         s.set_user,  s.uid,        s.gid,      s.ngroups,   s.groups, s.pty};
  /* A vm guard reads the spawn's strings until its program runs: they are its to keep. It
   * shares the agent's descriptors, so the program's ends stay open here until it reports
   * the program started; a forked guard has copies of them already. */
  void* released = NULL;
  pid_t guard = vm_guard_start(&g, s.block, &released);
  free(released);
  const int shared = guard != -ENOSYS;
  if (!shared)
    guard = fork_guard(&g);
  if (!shared || guard < 0) {
    free(s.block);
    close(po[1]);
    close(pe[1]);
    if (pi[0] >= 0)
      close(pi[0]);
    po[1] = pe[1] = pi[0] = -1;
  }
  if (guard < 0) {
    close(po[0]);
    close(pe[0]);
    if (pi[1] >= 0)
      close(pi[1]);
    free(in_buf);
    spawn_failed(id, -guard, "cannot start the exec's guard");
    return;
  }
  set_nonblock(po[0]);
  set_nonblock(pe[0]);
  if (pi[1] >= 0)
    set_nonblock(pi[1]);
  e->fd_program[0] = pi[0];
  e->fd_program[1] = po[1];
  e->fd_program[2] = pe[1];
  e->used = 1;
  e->id = id;
  e->serial = last_serial;
  e->guard = guard;
  e->fd_out[0] = po[0];
  e->fd_out[1] = pe[0];
  e->fd_in = pi[1];
  e->credit = s.window;
  e->max_output = s.max_output;
  e->in_buf = in_buf;
  e->pty = s.pty;
  e->backstop_at = s.timeout_ms > 0 ? now_ms() + s.timeout_ms + BACKSTOP_MS : 0;
}

/* Reads one chunk of stream `k` of `e` into the socket's buffer (or drops it past the cap);
 * -1 at end of file or error (closed), 0 when nothing was there, else the bytes read. */
static ssize_t read_output(struct exec* e, int k) {
  uint64_t room = e->max_output == 0           ? UINT64_MAX
                  : e->seen[k] < e->max_output ? e->max_output - e->seen[k]
                                               : 0;
  ssize_t n;
  if (room == 0) {
    n = read(e->fd_out[k], scratch, sizeof scratch);
    if (n > 0) {
      e->truncated = 1;
      e->seen[k] += (uint64_t)n;
    }
  } else {
    if (e->credit == 0)
      return 0;
    uint64_t want = e->credit < SBA_MAX_CHUNK ? e->credit : SBA_MAX_CHUNK;
    if (want > room)
      want = room;
    uint8_t kind = k == 0 ? SBA_OUT : SBA_ERR;
    /* Extend the last frame while at least 4 KiB fit in it, reading no more than fits. */
    int extend = last_off != (size_t)-1 && last_off >= out_sent && last_kind == kind &&
                 last_stream_of_frame == e->id &&
                 get32(out + last_off) + (4u << 10) <= SBA_MAX_CHUNK;
    if (extend && want > SBA_MAX_CHUNK - get32(out + last_off))
      want = SBA_MAX_CHUNK - get32(out + last_off);
    unsigned char* at = out_reserve(extend ? want : SBA_HEADER_BYTES + want);
    if (at == NULL)
      return 0;
    /* out_reserve may have moved the buffer: recheck the frame to extend. */
    extend = extend && last_off != (size_t)-1 && last_off >= out_sent;
    if (!extend)
      at = out_reserve(SBA_HEADER_BYTES + want);
    n = read(e->fd_out[k], extend ? at : at + SBA_HEADER_BYTES, (size_t)want);
    if (n > 0) {
      if (extend) {
        put32(out + last_off, get32(out + last_off) + (uint32_t)n);
        out_len += (size_t)n;
      } else {
        put_header(at, kind, e->id, (uint32_t)n);
        last_off = out_len;
        last_born_us = now_us();
        last_kind = kind;
        last_stream_of_frame = e->id;
        out_len += SBA_HEADER_BYTES + (size_t)n;
      }
      e->credit -= (uint64_t)n;
      e->seen[k] += (uint64_t)n;
    }
  }
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    close_fd(&e->fd_out[k]);
    return -1;
  }
  if (n > 0 && (size_t)n < REST_BELOW)
    e->rest_until[k] = now_us() + REST_US;
  return n < 0 ? 0 : n;
}

/* Takes every guard record the pipe holds. */
static void read_records(void) {
  struct guard_record r[64];
  for (;;) {
    ssize_t n = read(records_in, r, sizeof r);
    if (n <= 0)
      return; /* EAGAIN: none now (the agent holds the write end: never at its end) */
    for (ssize_t i = 0; i < n / (ssize_t)sizeof r[0]; ++i) {
      struct exec* e = NULL;
      for (int k = 0; k < MAX_EXECS && e == NULL; ++k)
        if (execs[k].used && execs[k].serial == r[i].id)
          e = &execs[k];
      if (e == NULL)
        continue; /* its exec ended meanwhile (the connection broke) */
      close_program_ends(e); /* the program has its copies, or will never run */
      if (r[i].kind == GUARD_STARTED && !e->started) {
        e->started = 1;
        put_u32_frame(SBA_STARTED, e->id, (uint32_t)r[i].value);
      } else if (r[i].kind == GUARD_EXITED && !e->ended) {
        e->ended = 1;
        e->wait_status = r[i].value;
      } else if (r[i].kind == GUARD_TIMED_OUT && !e->ended) {
        e->ended = 1;
        e->wait_status = SIGKILL;
        e->timed_out = 1;
      }
    }
  }
}

static void grant_stdin(struct exec* e, int all) {
  if (e->in_uncredited > 0 && (all || e->in_uncredited >= STDIN_CREDIT_BATCH)) {
    put_u32_frame(SBA_STDIN_CREDIT, e->id, e->in_uncredited);
    e->in_uncredited = 0;
  }
}

static void write_stdin(struct exec* e) {
  while (e->in_len > 0 && e->fd_in >= 0) {
    ssize_t n = write(e->fd_in, e->in_buf, e->in_len);
    if (n > 0) {
      memmove(e->in_buf, e->in_buf + n, e->in_len - (size_t)n);
      e->in_len -= (size_t)n;
      e->in_uncredited += (uint32_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      break;
    /* The program closed its stdin: what comes is dropped, and credited at once. */
    e->in_broken = 1;
    e->in_uncredited += (uint32_t)e->in_len;
    e->in_len = 0;
    close_fd(&e->fd_in);
  }
  if (e->in_end && e->in_len == 0)
    close_fd(&e->fd_in);
  grant_stdin(e, e->in_len == 0);
}

/* After the program's end: reads what the pipes hold now (within the credit), then reports
 * the end; 1 when the exec is over. */
static int finish(struct exec* e) {
  if (!e->ended) {
    if (!e->guard_ended)
      return 0;
    /* The guard ended without a report (killed; reap_all read its records after it was
     * reaped, so none is still on the way): its own status is the exec's. */
    e->ended = 1;
    e->wait_status = e->guard_status;
  }
  if (!e->started) {
    /* The guard ended before it said the program runs: output and the end follow a start
     * (pid 0: not known), as the host requires. */
    e->started = 1;
    put_u32_frame(SBA_STARTED, e->id, 0);
  }
  for (int k = 0; k < 2; ++k)
    while (e->fd_out[k] >= 0) {
      if (out_len - out_sent > OUT_HIGH)
        return 0;
      ssize_t n = read_output(e, k);
      if (n < 0)
        break;
      if (n == 0) {
        if (e->credit == 0 && (e->max_output == 0 || e->seen[k] < e->max_output))
          return 0;              /* data may be there; wait for credit */
        close_fd(&e->fd_out[k]); /* nothing more now: what comes later is not waited for */
        break;
      }
      e->drained[k] += (uint64_t)n;
      if (e->drained[k] >= DRAIN_BUDGET)
        close_fd(&e->fd_out[k]);
    }
  unsigned char b[8];
  put32(b, (uint32_t)e->wait_status);
  put32(b + 4, (e->timed_out ? SBA_EXIT_TIMED_OUT : 0) | (e->truncated ? SBA_EXIT_TRUNCATED : 0));
  put_frame(SBA_EXITED, e->id, b, 8);
  free_exec(e);
  return 1;
}

static void handle_frame(uint8_t kind, uint32_t stream, const unsigned char* b, uint32_t n) {
  struct exec* e = stream != 0 ? find_exec(stream) : NULL;
  switch (kind) {
  case SBA_WELCOME:
    backoff_ms = 10;
    return;
  case SBA_PING:
    if (n == 8)
      put_frame(SBA_PONG, 0, b, 8);
    return;
  case SBA_REPLACED:
    replaced = 1;
    drop_connection();
    return;
  case SBA_SPAWN:
    start_exec(stream, b, n);
    return;
  case SBA_STDIN:
    if (e == NULL)
      return; /* ended meanwhile */
    if (e->in_buf == NULL || e->in_end || e->in_len + n > SBA_STDIN_WINDOW) {
      drop_connection(); /* past the credit this agent granted */
      return;
    }
    if (e->in_broken) {
      e->in_uncredited += n;
    } else {
      memcpy(e->in_buf + e->in_len, b, n);
      e->in_len += n;
    }
    write_stdin(e);
    return;
  case SBA_STDIN_END:
    if (e != NULL) {
      e->in_end = 1;
      write_stdin(e);
    }
    return;
  case SBA_SIGNAL: {
    if (n != 4)
      return;
    int sig = (int)get32(b);
    int count = 0;
    if (e != NULL && guard_on(e) && sig >= 0 && sig < NSIG)
      count = sig == SIGKILL ? tree_kill(e->guard) : tree_signal(e->guard, sig);
    put_u32_frame(SBA_SIGNALLED, stream, (uint32_t)count);
    return;
  }
  case SBA_RESIZE:
    if (e != NULL && e->pty && e->fd_out[0] >= 0 && n == 4) {
      struct winsize ws = {(unsigned short)(b[2] | b[3] << 8), (unsigned short)(b[0] | b[1] << 8),
                           0, 0};
      if (ws.ws_col > 0 && ws.ws_row > 0 && ws.ws_col <= SBA_MAX_TERMINAL_SIDE &&
          ws.ws_row <= SBA_MAX_TERMINAL_SIDE)
        ioctl(e->fd_out[0], TIOCSWINSZ, &ws);
    }
    return;
  case SBA_CREDIT:
    if (e != NULL && n == 4) {
      e->credit += get32(b);
      if (e->credit > (64u << 20))
        e->credit = 64u << 20;
    }
    return;
  default:
    drop_connection();
  }
}

static void read_socket(void) {
  for (;;) {
    if (in_off > 0 && (in_len == in_off || IN_CAP - in_len < SBA_HEADER_BYTES + SBA_MAX_CHUNK)) {
      memmove(inbuf, inbuf + in_off, in_len - in_off);
      in_len -= in_off;
      in_off = 0;
    }
    ssize_t n = read(sock, inbuf + in_len, IN_CAP - in_len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    if (n <= 0) {
      drop_connection();
      return;
    }
    in_len += (size_t)n;
    while (sock >= 0 && in_len - in_off >= SBA_HEADER_BYTES) {
      const unsigned char* h = inbuf + in_off;
      uint32_t len = get32(h);
      if (len > SBA_MAX_BODY) {
        drop_connection();
        return;
      }
      if (in_len - in_off < SBA_HEADER_BYTES + len)
        break;
      in_off += SBA_HEADER_BYTES + len;
      handle_frame(h[4], get32(h + 8), h + SBA_HEADER_BYTES, len);
    }
    if (sock < 0)
      return;
  }
}

/* Where sending stops for now: before a held output frame (above), else at the end. */
static size_t flush_end(void) {
  if (last_off != (size_t)-1 && last_off >= out_sent && get32(out + last_off) < HOLD_BYTES &&
      now_us() - last_born_us < HOLD_US)
    return last_off;
  return out_len;
}

static void flush_socket(void) {
  for (size_t end = flush_end(); sock >= 0 && out_sent < end;) {
    ssize_t n = send(sock, out + out_sent, end - out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      out_sent += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    drop_connection();
  }
}

/* Reaps every child that ended, then reads the guards' records: a guard writes them before
 * it exits, so an exec whose guard is reaped has all of its records taken. */
static void reap_all(void) {
  int status;
  pid_t p;
  while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
    void* owned;
    if (vm_guard_reaped(p, &owned))
      free(owned);
    for (int i = 0; i < MAX_EXECS; ++i)
      if (execs[i].used && execs[i].guard == p) {
        execs[i].guard_ended = 1;
        execs[i].guard_status = status;
      }
  }
  read_records();
}

/* A guard that did not report within BACKSTOP_MS of the timeout (stopped by code in the
 * sandbox) has its tree killed from here. */
static void backstop(struct exec* e) {
  if (e->ended || e->backstop_at == 0 || now_ms() < e->backstop_at || !guard_on(e))
    return;
  tree_kill(e->guard);
  kill(e->guard, SIGKILL);
  e->ended = 1;
  e->timed_out = 1;
  e->wait_status = SIGKILL;
}

int agent_main(const char* path) {
  socket_path = path;
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  /* Every signal at its default but SIGPIPE: a program's process then needs to reset only
   * SIGPIPE (and its guard's SIGHUP) before its execve (vm_guard.h). */
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal(sig, sig == SIGPIPE ? SIG_IGN : SIG_DFL);
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2)
      close(null);
  }
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int records[2];
  inbuf = malloc(IN_CAP);
  if (sigfd < 0 || inbuf == NULL || pipe2(records, O_CLOEXEC) != 0)
    return 1;
  records_in = records[0];
  records_out = records[1];
  set_nonblock(records_in);
  dev_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (int i = 0; i < MAX_EXECS; ++i)
    init_exec(&execs[i]);

  enum { P_SIG, P_SOCK, P_RECORDS, P_OUT, P_ERR, P_IN };
  static struct pollfd pfd[3 + 3 * MAX_EXECS];
  static int what[3 + 3 * MAX_EXECS], whom[3 + 3 * MAX_EXECS];
  for (;;) {
    if (sock < 0 && !replaced && now_ms() >= reconnect_at)
      try_connect();
    int n = 0;
    pfd[n] = (struct pollfd){sigfd, POLLIN, 0};
    what[n++] = P_SIG;
    pfd[n] = (struct pollfd){records_in, POLLIN, 0};
    what[n++] = P_RECORDS;
    const size_t end = flush_end();
    const int holding = end < out_len;
    if (sock >= 0) {
      pfd[n] = (struct pollfd){sock, (short)(POLLIN | (out_sent < end ? POLLOUT : 0)), 0};
      what[n++] = P_SOCK;
    }
    int64_t wake = sock < 0 && !replaced ? reconnect_at : INT64_MAX;
    const int64_t now = now_us();
    int64_t wake_us = holding ? last_born_us + HOLD_US : INT64_MAX;
    for (int i = 0; i < MAX_EXECS; ++i) {
      struct exec* e = &execs[i];
      if (!e->used)
        continue;
      if (e->backstop_at != 0 && !e->ended && e->backstop_at < wake)
        wake = e->backstop_at;
      if (e->ended)
        continue; /* finish() reads what is left after every wake-up */
      for (int k = 0; k < 2; ++k) {
        /* Output only after the start is put: the program may write before its guard
         * reports it. */
        int room = (e->max_output != 0 && e->seen[k] >= e->max_output) || e->credit > 0;
        if (e->fd_out[k] >= 0 && e->started && room && out_len - out_sent <= OUT_HIGH) {
          if (e->rest_until[k] > now) {
            if (e->rest_until[k] < wake_us)
              wake_us = e->rest_until[k];
            continue;
          }
          pfd[n] = (struct pollfd){e->fd_out[k], POLLIN, 0};
          what[n] = k == 0 ? P_OUT : P_ERR, whom[n++] = i;
        }
      }
      if (e->fd_in >= 0 && e->in_len > 0) {
        pfd[n] = (struct pollfd){e->fd_in, POLLOUT, 0};
        what[n] = P_IN, whom[n++] = i;
      }
    }
    if (wake != INT64_MAX) {
      const int64_t t = (wake - now_ms()) * 1000;
      if (now + (t < 1000000 ? t : 1000000) < wake_us)
        wake_us = now + (t < 0 ? 0 : t < 1000000 ? t : 1000000);
    }
    struct timespec left, *timeout = NULL;
    if (wake_us != INT64_MAX) {
      const int64_t us = wake_us > now ? wake_us - now : 0;
      left.tv_sec = us / 1000000;
      left.tv_nsec = (us % 1000000) * 1000;
      timeout = &left;
    }
    if (ppoll(pfd, (nfds_t)n, timeout, NULL) < 0 && errno != EINTR)
      return 1;
    for (int j = 0; j < n; ++j) {
      if (pfd[j].revents == 0)
        continue;
      switch (what[j]) {
      case P_SIG: {
        struct signalfd_siginfo si;
        while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
          if (si.ssi_signo == SIGTERM && si.ssi_pid == 0)
            return 0; /* from outside the sandbox: the container stops */
        reap_all();
        break;
      }
      case P_SOCK:
        if (pfd[j].revents & (POLLIN | POLLHUP | POLLERR))
          read_socket();
        break;
      case P_RECORDS:
        read_records();
        break;
      case P_OUT:
      case P_ERR:
        if (execs[whom[j]].used && execs[whom[j]].fd_out[what[j] == P_ERR] >= 0)
          read_output(&execs[whom[j]], what[j] == P_ERR);
        break;
      case P_IN:
        if (execs[whom[j]].used)
          write_stdin(&execs[whom[j]]);
        break;
      }
    }
    /* Children that ended were reaped on their SIGCHLD (the signalfd), above. */
    for (int i = 0; i < MAX_EXECS; ++i)
      if (execs[i].used) {
        backstop(&execs[i]);
        if (sock >= 0)
          finish(&execs[i]);
      }
    flush_socket();
  }
}
