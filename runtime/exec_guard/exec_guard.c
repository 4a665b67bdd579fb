/* sandboxd-exec-guard — the first process of every exec inside a sandbox (crun and runsc
 * alike). It makes itself a child subreaper, runs the exec's program as its child, and
 * exits with that child's status as soon as the child ends; processes the program left
 * running in the background are then re-parented to the sandbox's init and live on.
 *
 * When the exec's timeout passes first (or the guard gets SIGTERM), it kills everything
 * the program started, however it forked: every process that leaves the tree (a double
 * fork, setsid) is re-parented to the guard, because it is the nearest subreaper, so the
 * guard kills its own children with SIGKILL, reaps, and repeats until it has none left.
 * It only ever signals its own children that it has not reaped, so no PID number can
 * have been reused for another process. It then ends itself with SIGKILL.
 *
 *   sandboxd-exec-guard <timeout in ms, 0 for none> -- program [args...]
 *
 * It also writes files for the driver into a sandbox whose kernel keeps the file system
 * to itself (runsc with exclusive file access), as the sandbox's root and through the
 * sandbox's own view of its paths:
 *
 *   sandboxd-exec-guard --write <absolute path> <octal mode>   (content on stdin)
 *
 *   sandboxd-exec-guard --mkdir <absolute path> <octal mode> <p: with parents | ->
 *   sandboxd-exec-guard --remove <absolute path> <r: recursive | ->
 *   sandboxd-exec-guard --rename <absolute path> <absolute path>
 *
 * Missing parents are made (0755); the content goes to a temporary file beside the
 * target, is synced and renamed over it (a reader sees the old or the new file). A
 * recursive removal never follows a symlink (nftw with FTW_PHYS). On failure it prints
 * "errno <n>" on stderr and exits 1.
 *
 * Static, no allocation after start; built with the project and bind-mounted read-only
 * into every sandbox at /dev/.sandboxd-exec-guard (runtime/exec_guard.hpp). */
#define _GNU_SOURCE
#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* The parent pid in /proc/<pid>/stat (the field after the parenthesised name). */
static pid_t parent_of(const char* pid) {
  char path[300], buf[512];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  char* close_paren = strrchr(buf, ')');
  if (close_paren == NULL)
    return -1;
  char state;
  int ppid;
  if (sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
    return -1;
  return ppid;
}

/* SIGKILL to every child of this process (found in /proc); how many there were. */
static int kill_children(void) {
  pid_t self = getpid();
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == NULL)
    return 0;
  struct dirent* e;
  while ((e = readdir(proc)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if (parent_of(e->d_name) == self) {
      kill((pid_t)atoi(e->d_name), SIGKILL);
      ++found;
    }
  }
  closedir(proc);
  return found;
}

/* Kills the whole tree below this process and reaps it. */
static void end_everything(void) {
  for (;;) {
    kill_children();
    /* Reap what died; orphans of the killed come to us and are found next round. */
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (p < 0 && errno == ECHILD)
      return;
    usleep(1000);
  }
}

static int write_failed(int e, const char* tmp) {
  if (tmp != NULL)
    unlink(tmp);
  fprintf(stderr, "errno %d\n", e);
  return 1;
}

/* Makes every missing parent directory of `path` (an absolute path, changed in place
 * and restored). */
static int make_parents(char* path) {
  for (char* p = strchr(path + 1, '/'); p != NULL; p = strchr(p + 1, '/')) {
    *p = 0;
    int r = mkdir(path, 0755);
    int e = errno;
    *p = '/';
    if (r != 0 && e != EEXIST)
      return e;
  }
  return 0;
}

static int write_file(char* path, const char* mode_text) {
  mode_t mode = (mode_t)(strtoul(mode_text, NULL, 8) & 0777);
  int e = make_parents(path);
  if (e != 0)
    return write_failed(e, NULL);
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return write_failed(EISDIR, NULL);
  char tmp[4200];
  char* slash = strrchr(path, '/');
  if (snprintf(tmp, sizeof tmp, "%.*s/.sandboxd-write-%d", (int)(slash - path), path,
               (int)getpid()) >= (int)sizeof tmp)
    return write_failed(ENAMETOOLONG, NULL);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return write_failed(errno, NULL);
  char buf[65536];
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return write_failed(errno, tmp);
    if (n == 0)
      break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(fd, buf + off, (size_t)(n - off));
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return write_failed(errno, tmp);
      off += w;
    }
  }
  if (fchmod(fd, mode) != 0 || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0)
    return write_failed(errno, tmp);
  return 0;
}

static int make_dir(char* path, const char* mode_text, int parents) {
  mode_t mode = (mode_t)(strtoul(mode_text, NULL, 8) & 0777);
  if (parents) {
    int e = make_parents(path);
    if (e != 0)
      return write_failed(e, NULL);
  }
  struct stat st;
  if (mkdir(path, 0700) != 0) {
    int e = errno;
    if (e == EEXIST && parents && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
      return 0;
    return write_failed(e, NULL);
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fchmod(fd, mode) != 0)
    return write_failed(errno, NULL);
  close(fd);
  return 0;
}

static int remove_entry(const char* path, const struct stat* st, int type, struct FTW* f) {
  (void)st;
  (void)f;
  return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : errno;
}

static int remove_path(const char* path, int recursive) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return write_failed(errno, NULL);
  if (!S_ISDIR(st.st_mode))
    return unlink(path) == 0 ? 0 : write_failed(errno, NULL);
  if (!recursive)
    return rmdir(path) == 0 ? 0 : write_failed(errno == EEXIST ? ENOTEMPTY : errno, NULL);
  int e = nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
  return e == 0 ? 0 : write_failed(e > 0 ? e : errno, NULL);
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--write") == 0 && argv[2][0] == '/')
    return write_file(argv[2], argv[3]);
  if (argc == 5 && strcmp(argv[1], "--mkdir") == 0 && argv[2][0] == '/')
    return make_dir(argv[2], argv[3], argv[4][0] == 'p');
  if (argc == 4 && strcmp(argv[1], "--remove") == 0 && argv[2][0] == '/')
    return remove_path(argv[2], argv[3][0] == 'r');
  if (argc == 4 && strcmp(argv[1], "--rename") == 0 && argv[2][0] == '/' && argv[3][0] == '/')
    return rename(argv[2], argv[3]) == 0 ? 0 : write_failed(errno, NULL);
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: %s <timeout-ms> -- program [args...]\n", argv[0]);
    return 125;
  }
  long timeout_ms = strtol(argv[1], NULL, 10);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  /* The guard waits for these synchronously (sigwaitinfo): none is lost between a check
   * and the wait. */
  sigset_t wanted, old;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, SIGALRM);
  sigaddset(&wanted, SIGTERM);
  sigprocmask(SIG_BLOCK, &wanted, &old);

  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "sandboxd-exec-guard: fork: %s\n", strerror(errno));
    return 126;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "%s: %s\n", argv[3], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (timeout_ms > 0) {
    struct itimerval t;
    memset(&t, 0, sizeof t);
    t.it_value.tv_sec = timeout_ms / 1000;
    t.it_value.tv_usec = (timeout_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &t, NULL);
  }
  for (;;) {
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
      if (p != child)
        continue; /* an orphan that ended: reaped */
      if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        kill(getpid(), sig);
        return 128 + sig;
      }
      return WEXITSTATUS(status);
    }
    siginfo_t info;
    int sig = sigwaitinfo(&wanted, &info);
    if (sig == SIGALRM || sig == SIGTERM) {
      end_everything();
      kill(getpid(), SIGKILL);
      return 137;
    }
  }
}
