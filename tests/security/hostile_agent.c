/* hostile_agent — a program that takes the place of a sandbox's agent and then breaks the
 * protocol (docs/agent-protocol.md), for tests/security/test_hostile_agent.cpp. Static, run
 * inside the sandbox as a background process (so that no exec of the real agent is in
 * flight when it takes over):
 *
 *   hostile-agent <mode>
 *
 * It waits until it is re-parented to the sandbox's init (the exec that started it ended),
 * connects to the agent's socket, says a valid hello (so the host makes it the agent), waits
 * for the welcome, writes "agent" to /tmp/hostile.<mode> and then, by mode:
 *
 *   garbage      64 KiB of pseudo-random bytes
 *   huge         a header claiming a body of 4 GiB - 16, then bytes as fast as it can
 *   partial      a header claiming 1 MiB and 1000 bytes of the body, then nothing
 *   silent       nothing at all (every spawn the host sends stays unanswered)
 *   flood        answers each spawn with a start and then output frames of 1 MiB as fast
 *                as the credit allows, past the exec's output cap
 *   connections  64 more connections to the socket, each with a hello
 *
 * and then sleeps until it is killed. */
#define _GNU_SOURCE
#include "runtime/exec_guard/agent_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void put32(unsigned char* p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void header(unsigned char* h, uint8_t kind, uint32_t stream, uint32_t len) {
  put32(h, len);
  h[4] = kind;
  h[5] = h[6] = h[7] = 0;
  put32(h + 8, stream);
}

/* Writes all of `n` bytes; 0 once the host closed the connection. */
static int send_all(int s, const void* p, size_t n) {
  const char* c = p;
  while (n > 0) {
    ssize_t w = send(s, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return 0;
    c += w;
    n -= (size_t)w;
  }
  return 1;
}

static int read_all(int s, void* p, size_t n) {
  char* c = p;
  while (n > 0) {
    ssize_t r = read(s, c, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    c += r;
    n -= (size_t)r;
  }
  return 1;
}

/* Reads one frame of the host; its body (malloc'd) in *body. 0 at the end. */
static int read_frame(int s, uint8_t* kind, uint32_t* stream, unsigned char** body, uint32_t* len) {
  unsigned char h[SBA_HEADER_BYTES];
  if (!read_all(s, h, sizeof h))
    return 0;
  *len = get32(h);
  *kind = h[4];
  *stream = get32(h + 8);
  if (*len > SBA_MAX_BODY)
    return 0;
  *body = malloc(*len + 1);
  if (*body == NULL)
    return 0;
  return read_all(s, *body, *len);
}

static int connect_agent(void) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", SBA_SOCKET_DIR, SBA_SOCKET_NAME);
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a) != 0)
    return -1;
  return s;
}

static int hello(int s) {
  unsigned char f[SBA_HEADER_BYTES + 20];
  header(f, SBA_HELLO, 0, 20);
  memcpy(f + SBA_HEADER_BYTES, SBA_MAGIC, 8);
  put32(f + SBA_HEADER_BYTES + 8, SBA_VERSION);
  put32(f + SBA_HEADER_BYTES + 12, (uint32_t)getpid());
  put32(f + SBA_HEADER_BYTES + 16, 0);
  return send_all(s, f, sizeof f);
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static void forever(void) {
  for (;;)
    pause();
}

/* Answers spawns with a start and output past every credit and cap: 1 MiB frames, sent as
 * the credit allows (the host grants as it takes). */
static void flood(int s) {
  static unsigned char frame[SBA_HEADER_BYTES + SBA_MAX_BODY];
  memset(frame + SBA_HEADER_BYTES, 'f', SBA_MAX_BODY);
  uint32_t stream = 0;
  uint64_t credit = 0;
  for (;;) {
    uint8_t kind;
    uint32_t id, len;
    unsigned char* body = NULL;
    if (!read_frame(s, &kind, &id, &body, &len))
      return;
    if (kind == SBA_SPAWN && stream == 0) {
      stream = id;
      for (uint32_t p = 0; p + 5 <= len;) { /* the spawn's first credit */
        uint32_t n = get32(body + p + 1);
        if (body[p] == SBA_WINDOW && n == 4)
          credit = get32(body + p + 5);
        p += 5 + n;
      }
      unsigned char st[SBA_HEADER_BYTES + 4];
      header(st, SBA_STARTED, stream, 4);
      put32(st + SBA_HEADER_BYTES, 1);
      if (!send_all(s, st, sizeof st))
        return;
    } else if (kind == SBA_CREDIT && id == stream && len == 4) {
      credit += get32(body);
    }
    free(body);
    while (stream != 0 && credit > 0) {
      uint32_t n = credit < SBA_MAX_BODY ? (uint32_t)credit : SBA_MAX_BODY;
      header(frame, SBA_OUT, stream, n);
      if (!send_all(s, frame, SBA_HEADER_BYTES + n))
        return;
      credit -= n;
    }
  }
}

int main(int argc, char** argv) {
  if (argc != 2)
    return 2;
  const char* mode = argv[1];
  for (int i = 0; i < 500 && getppid() != 1; ++i)
    sleep_ms(10);
  sleep_ms(100); /* the end of the exec that started it reaches the host first */
  int s = connect_agent();
  if (s < 0 || !hello(s))
    return 3;
  uint8_t kind;
  uint32_t id, len;
  unsigned char* body = NULL;
  if (!read_frame(s, &kind, &id, &body, &len) || kind != SBA_WELCOME)
    return 4;
  free(body);
  char mark[64];
  snprintf(mark, sizeof mark, "/tmp/hostile.%s", mode);
  int m = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (m >= 0) {
    (void)!write(m, "agent\n", 6);
    close(m);
  }

  if (strcmp(mode, "garbage") == 0) {
    unsigned char junk[64 << 10];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof junk; ++i) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      junk[i] = (unsigned char)x;
    }
    send_all(s, junk, sizeof junk);
  } else if (strcmp(mode, "huge") == 0) {
    static unsigned char chunk[1 << 16];
    header(chunk, SBA_OUT, 1, 0xfffffff0u);
    while (send_all(s, chunk, sizeof chunk)) {
    }
  } else if (strcmp(mode, "partial") == 0) {
    unsigned char part[SBA_HEADER_BYTES + 1000];
    memset(part, 'p', sizeof part);
    header(part, SBA_PONG, 0, SBA_MAX_BODY);
    send_all(s, part, sizeof part);
  } else if (strcmp(mode, "flood") == 0) {
    flood(s);
  } else if (strcmp(mode, "connections") == 0) {
    for (int i = 0; i < 64; ++i) {
      int c = connect_agent();
      if (c < 0)
        break;
      hello(c);
    }
  } else if (strcmp(mode, "silent") != 0) {
    return 2;
  }
  forever();
}
