/* spawn_probe — the floor of an exec inside a sandbox, for runtime_bench: run there, it
 * starts `argv[2..]` `argv[1]` times, one after another, each with vfork, execvp and waitpid
 * (the least a process that starts programs can do; the agent does that and more), and prints
 * each one's wall time in milliseconds, one a line. Static: it runs in any template. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <count> program [args...]\n", argv[0]);
    return 2;
  }
  const int count = atoi(argv[1]);
  for (int i = 0; i < count; ++i) {
    const double t0 = now_ms();
    pid_t p = vfork();
    if (p == 0) {
      execvp(argv[2], argv + 2);
      _exit(127);
    }
    int status = 0;
    if (p < 0 || waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return 1;
    printf("%.3f\n", now_ms() - t0);
  }
  return 0;
}
