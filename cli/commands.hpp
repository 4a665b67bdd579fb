// commands — the groups of sandboxctl commands, each adding its commands to the table
// (command_table.hpp). One file per group: the flags of each command and the function that
// runs it against the client.
#pragma once

namespace sandboxd::cli {

class command_table;

// create, get, list, set-timeout, pause, resume, delete, redact
void add_sandbox_commands(command_table& t);
// exec, ps, kill, wait
void add_exec_commands(command_table& t);
// write, read, ls, stat, mkdir, rm, mv, cp-in, cp-out
void add_file_commands(command_table& t);
// events, watch
void add_event_commands(command_table& t);
// bill, audit, audit verify
void add_report_commands(command_table& t);
// replay, diff (from the event log itself: through the daemon, or offline)
void add_replay_commands(command_table& t);
// projections status, verify, rebuild
void add_projection_commands(command_table& t);
// check determinism
void add_check_commands(command_table& t);
// pool list, set, rm (warm pools)
void add_pool_commands(command_table& t);
// snapshot create, list, show, rm; fork
void add_snapshot_commands(command_table& t);
// template list, show, build, import, rm
void add_template_commands(command_table& t);
// completion, version, and the hidden reference generator
void add_meta_commands(command_table& t);

} // namespace sandboxd::cli
