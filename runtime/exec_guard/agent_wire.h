/* agent_wire.h — the numbers of the agent protocol (docs/agent-protocol.md), shared by the
 * agent inside the sandbox (C, this folder) and the host side (runtime/agent_*.cpp), so the
 * two never disagree on a kind, a tag or a limit.
 *
 * Frame header is length (4 bytes, of the body), kind (1 byte), flags (1 byte, 0),
 * reserved (2 bytes, 0) and stream (4 bytes); then the body. Little-endian. */
#ifndef SANDBOXD_AGENT_WIRE_H
#define SANDBOXD_AGENT_WIRE_H

#define SBA_HEADER_BYTES 12u
/* No body is longer (the host refuses a longer length before reading it). */
#define SBA_MAX_BODY (1u << 20)
/* The most output one out/err frame carries (the agent coalesces up to this). */
#define SBA_MAX_CHUNK (256u << 10)
/* stdin bytes the host may send on a stream before the agent grants more. */
#define SBA_STDIN_WINDOW (256u << 10)
#define SBA_VERSION 1u
#define SBA_MAGIC "sbdagent"

/* Where the agent's socket is inside the sandbox (a read-only bind of a host directory). */
#define SBA_SOCKET_DIR "/dev/.sandboxd"
#define SBA_SOCKET_NAME "agent.sock"

/* Kinds sent by the agent. */
enum sba_agent_kind {
  SBA_HELLO = 1,        /* stream 0: magic (8) | version u32 | pid u32 | features u32 */
  SBA_PONG = 2,         /* stream 0: nonce u64 */
  SBA_STARTED = 3,      /* pid u32: the program runs */
  SBA_OUT = 4,          /* stdout bytes, within the stream's output credit */
  SBA_ERR = 5,          /* stderr bytes, within the same credit */
  SBA_EXITED = 6,       /* wait status i32 | flags u32 (SBA_EXIT_*); the stream is over */
  SBA_FAILED = 7,       /* errno u32 | text: the program could not be started; over */
  SBA_SIGNALLED = 8,    /* count u32: processes the last signal request reached */
  SBA_STDIN_CREDIT = 9, /* bytes u32: the host may send this much more stdin */
};

/* Kinds sent by the host. */
enum sba_host_kind {
  SBA_WELCOME = 64,   /* stream 0: version u32 */
  SBA_PING = 65,      /* stream 0: nonce u64 */
  SBA_SPAWN = 66,     /* a new stream (ids rise, never reused): fields, below */
  SBA_STDIN = 67,     /* stdin bytes, within the stdin credit */
  SBA_STDIN_END = 68, /* end of stdin */
  SBA_SIGNAL = 69,    /* signal u32: to every process below the exec's guard (0: count) */
  SBA_CREDIT = 70,    /* bytes u32: more output credit for the stream */
  SBA_REPLACED = 71,  /* stream 0: another connection is the agent now; do not reconnect */
  SBA_RESIZE = 72,    /* cols u16 | rows u16: a terminal stream's new window size */
};

/* Fields of a spawn body, each tag u8 | length u32 | value. */
enum sba_spawn_tag {
  SBA_ARG = 1,        /* one argument, in order (at least one) */
  SBA_ENV = 2,        /* one NAME=value, in order */
  SBA_CWD = 3,        /* absolute path */
  SBA_TIMEOUT_MS = 4, /* u64, 0: none */
  SBA_STDIN_PIPE = 5, /* u8 1: stdin frames follow; otherwise /dev/null */
  SBA_MAX_OUTPUT = 6, /* u64 per stream; the rest is read and dropped (SBA_EXIT_TRUNCATED) */
  SBA_WINDOW = 7,     /* u32: the stream's first output credit */
  SBA_BUILTIN = 8,    /* u8 SBA_BUILTIN_*: a file change by the agent's own code, no program */
  SBA_USER = 9,       /* uid u32 | gid u32 | supplementary gid u32 (at most SBA_MAX_GROUPS):
                       * the program runs as this user; without the field, as root */
  SBA_PTY = 10,       /* cols u16 | rows u16: stdin, stdout and stderr are a new terminal of
                       * this size, the program's controlling terminal in a session of its
                       * own; its output comes as OUT frames, STDIN frames are its keyboard */
};

/* Supplementary groups an SBA_USER field carries, at most. */
#define SBA_MAX_GROUPS 64u
/* A terminal's columns and rows, each at least 1 and at most this. */
#define SBA_MAX_TERMINAL_SIDE 4096u

enum sba_builtin {
  SBA_BUILTIN_WRITE = 1,  /* args: path, octal mode; content on stdin */
  SBA_BUILTIN_MKDIR = 2,  /* args: path, octal mode, "p" (with parents) or "-" */
  SBA_BUILTIN_REMOVE = 3, /* args: path, "r" (recursive) or "-" */
  SBA_BUILTIN_RENAME = 4, /* args: from, to */
};

#define SBA_EXIT_TIMED_OUT 1u /* the timeout ended it (and everything it started) */
#define SBA_EXIT_TRUNCATED 2u /* more output than SBA_MAX_OUTPUT was produced */

#endif
