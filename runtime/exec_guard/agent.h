/* agent.h — the sandbox's first process (docs/agent-protocol.md has the wire format).
 *
 * It connects to the host's unix socket (a read-only bind of a host directory at
 * SBA_SOCKET_DIR), says hello, and then runs what the host asks on streams: an exec (a
 * program under its own guard, guard.h, with its stdin, stdout and stderr as pipes) or a
 * file change (builtins.h, in a guard of its own). It streams output in frames of up to
 * SBA_MAX_CHUNK within the credit the host grants, so a slow host slows the program's pipe
 * and nothing grows; it takes stdin within the credit it grants. It reaps every orphan,
 * as a sandbox's init must.
 *
 * An exec's timeout is its guard's; should the guard not report within 5 s of it (code in
 * the sandbox stopped it), the agent kills the guard's tree from outside and reports the
 * exec timed out.
 *
 * When the connection breaks (the host restarted), every exec in flight is killed (its
 * outcome cannot be delivered; the host records it interrupted) and the agent connects
 * again, every 10 ms at first and at most every 500 ms. When the host says another
 * connection took over (SBA_REPLACED) it never connects again.
 *
 * It is not dumpable (other processes of the sandbox cannot read or write its memory) and
 * ignores signals sent from inside the sandbox; SIGTERM from outside ends it. */
#ifndef SANDBOXD_AGENT_H
#define SANDBOXD_AGENT_H

int agent_main(const char* socket_path);

#endif
