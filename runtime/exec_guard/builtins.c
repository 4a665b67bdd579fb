/* builtins.c — see builtins.h. */
#define _GNU_SOURCE
#include "builtins.h"

#include "agent_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int builtin_write(char* path, const char* mode_text) {
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

int builtin_mkdir(char* path, const char* mode_text, int parents) {
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

int builtin_remove(const char* path, int recursive) {
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

int builtin_rename(const char* from, const char* to) {
  return rename(from, to) == 0 ? 0 : write_failed(errno, NULL);
}

int builtin_run(int kind, int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (argv[i] == NULL)
      return write_failed(EINVAL, NULL);
  if (argc < 1 || argv[0][0] != '/')
    return write_failed(EINVAL, NULL);
  switch (kind) {
  case SBA_BUILTIN_WRITE:
    return argc == 2 ? builtin_write(argv[0], argv[1]) : write_failed(EINVAL, NULL);
  case SBA_BUILTIN_MKDIR:
    return argc == 3 ? builtin_mkdir(argv[0], argv[1], argv[2][0] == 'p')
                     : write_failed(EINVAL, NULL);
  case SBA_BUILTIN_REMOVE:
    return argc == 2 ? builtin_remove(argv[0], argv[1][0] == 'r') : write_failed(EINVAL, NULL);
  case SBA_BUILTIN_RENAME:
    return argc == 2 && argv[1][0] == '/' ? builtin_rename(argv[0], argv[1])
                                          : write_failed(EINVAL, NULL);
  }
  return write_failed(EINVAL, NULL);
}
