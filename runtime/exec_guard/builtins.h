/* builtins.h — file changes made from inside a sandbox whose kernel keeps its file system
 * to itself (runsc with exclusive file access): as the sandbox's root, through the
 * sandbox's own view of its paths. Each reads its content (write) on stdin and, on
 * failure, prints "errno <n>" on stderr and returns 1; 0 on success.
 *
 * Missing parents are made (0755); the content goes to a temporary file beside the
 * target, is synced and renamed over it (a reader sees the old or the new file). A
 * recursive removal never follows a symlink (nftw with FTW_PHYS). */
#ifndef SANDBOXD_BUILTINS_H
#define SANDBOXD_BUILTINS_H

int builtin_write(char* path, const char* octal_mode);
int builtin_mkdir(char* path, const char* octal_mode, int parents);
int builtin_remove(const char* path, int recursive);
int builtin_rename(const char* from, const char* to);

/* Runs builtin `kind` (SBA_BUILTIN_*, agent_wire.h) with `argc` arguments: a usage error
 * is "errno 22" (EINVAL). */
int builtin_run(int kind, int argc, char** argv);

#endif
