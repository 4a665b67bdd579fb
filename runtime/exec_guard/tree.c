/* tree.c — see tree.h. */
#define _GNU_SOURCE
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct proc_entry {
  pid_t pid;
  pid_t ppid;
  unsigned long long start; /* start time in clock ticks: tells a reused PID apart */
  int below;                /* 1 when below the root */
  int stopped;              /* tree_kill: sent SIGSTOP already */
};

/* The parent and start time in /proc/<pid>/stat (fields 4 and 22, after the name). */
static int read_stat(pid_t pid, pid_t* ppid, unsigned long long* start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  char* p = strrchr(buf, ')');
  if (p == NULL)
    return -1;
  char state;
  int pp;
  /* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
   * cutime cstime priority nice num_threads itrealvalue starttime */
  if (sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
             &state, &pp, start) != 3)
    return -1;
  *ppid = pp;
  return 0;
}

/* Every process of /proc, into a growing array; its length, -1 when /proc cannot be read. */
static int scan(struct proc_entry** out, int* cap) {
  DIR* proc = opendir("/proc");
  if (proc == NULL)
    return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(proc)) != NULL) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9')
      continue;
    pid_t pid = (pid_t)atoi(e->d_name);
    pid_t ppid;
    unsigned long long start;
    if (read_stat(pid, &ppid, &start) != 0)
      continue;
    if (n == *cap) {
      int grown = *cap ? *cap * 2 : 256;
      struct proc_entry* p = realloc(*out, (size_t)grown * sizeof **out);
      if (p == NULL)
        break;
      *out = p;
      *cap = grown;
    }
    (*out)[n].pid = pid;
    (*out)[n].ppid = ppid;
    (*out)[n].start = start;
    (*out)[n].below = 0;
    (*out)[n].stopped = 0;
    ++n;
  }
  closedir(proc);
  return n;
}

/* Marks the entries below `root` (parents before children need not hold: repeated until no
 * mark is added). */
static void mark_below(struct proc_entry* t, int n, pid_t root) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < n; ++i) {
      if (t[i].below || t[i].pid == root)
        continue;
      if (t[i].ppid == root) {
        t[i].below = changed = 1;
        continue;
      }
      for (int j = 0; j < n; ++j)
        if (t[j].below && t[j].pid == t[i].ppid) {
          t[i].below = changed = 1;
          break;
        }
    }
  }
}

/* Signals one process found in a scan, held by a pidfd while its start time is checked
 * again (the same PID and start time: the same process; its parent may have changed, an
 * orphan being re-parented meanwhile); 1 when it was signalled. */
static int signal_one(const struct proc_entry* e, int sig) {
  int pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
  if (pidfd < 0 && errno != ENOSYS)
    return 0; /* ended */
  pid_t ppid;
  unsigned long long start;
  int same = read_stat(e->pid, &ppid, &start) == 0 && start == e->start;
  int sent = 0;
  if (same) {
    if (pidfd >= 0)
      sent = syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0;
    else
      sent = kill(e->pid, sig) == 0;
  }
  if (pidfd >= 0)
    close(pidfd);
  return sent;
}

int tree_signal(pid_t root, int sig) {
  struct proc_entry* t = NULL;
  int cap = 0;
  int n = scan(&t, &cap);
  int count = 0;
  if (n > 0) {
    mark_below(t, n, root);
    for (int i = 0; i < n; ++i)
      if (t[i].below)
        count += sig == 0 ? 1 : signal_one(&t[i], sig);
  }
  free(t);
  return count;
}

int tree_kill(pid_t root) {
  /* The stopped members, kept across rounds. */
  struct proc_entry* held = NULL;
  int held_n = 0, held_cap = 0;
  struct proc_entry* t = NULL;
  int cap = 0;
  for (int round = 0; round < 100; ++round) {
    int n = scan(&t, &cap);
    if (n <= 0)
      break;
    mark_below(t, n, root);
    int added = 0;
    for (int i = 0; i < n; ++i) {
      if (!t[i].below)
        continue;
      int known = 0;
      for (int j = 0; j < held_n && !known; ++j)
        known = held[j].pid == t[i].pid && held[j].start == t[i].start;
      if (known)
        continue;
      if (held_n == held_cap) {
        int grown = held_cap ? held_cap * 2 : 64;
        struct proc_entry* p = realloc(held, (size_t)grown * sizeof *held);
        if (p == NULL)
          break;
        held = p;
        held_cap = grown;
      }
      if (signal_one(&t[i], SIGSTOP)) {
        held[held_n++] = t[i];
        ++added;
      }
    }
    if (added == 0)
      break;
  }
  int count = 0;
  for (int i = 0; i < held_n; ++i)
    count += signal_one(&held[i], SIGKILL);
  free(held);
  free(t);
  return count;
}

/* The children of this process (found in /proc) get SIGKILL; how many there were. */
static int kill_children(void) {
  pid_t self = getpid();
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == NULL)
    return 0;
  struct dirent* e;
  while ((e = readdir(proc)) != NULL) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9')
      continue;
    pid_t ppid;
    unsigned long long start;
    if (read_stat((pid_t)atoi(e->d_name), &ppid, &start) == 0 && ppid == self) {
      kill((pid_t)atoi(e->d_name), SIGKILL);
      ++found;
    }
  }
  closedir(proc);
  return found;
}

void tree_end_children(void) {
  for (;;) {
    kill_children();
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (p < 0 && errno == ECHILD)
      return;
    usleep(1000);
  }
}
