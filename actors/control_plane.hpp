// control_plane.hpp — the actor system of one node, behind a header with no CAF in it:
// what the RPC layer, the daemon, tests and benchmarks call.
//
// Construction recovers (recovery.hpp): every sandbox of the log is known and none is in
// a transitional state before the first command is taken. Then every command goes to the
// sandbox's actor (sandbox_directory finds or reactivates it), which decides with the pure
// state machine and persists the events through the journal.
//
// Guarantees:
// - Persist, then reply: a reply that carries no failure is sent only after the command's
//   events are durable in the log, and a runtime step starts only after the event that
//   asks for it is durable. An append that certainly stored nothing yields a failure reply
//   (errc::unavailable, "nothing was changed") and no runtime step.
// - An append whose fate is unknown (the log's `maybe_stored`) is never answered "nothing
//   was changed" and its sequence numbers are never used for other events: the sandbox's
//   actor reads its partition back, applies what landed and appends what is missing again,
//   identical, until the log holds it all; only then does it decide anything else for the
//   sandbox. Its callers are answered as usual when that succeeds at once, otherwise with
//   errc::unavailable saying the outcome is unknown (docs/actors.md).
// - Runtime results, exec results, samples and timer firings whose append failed are
//   decided again after a backoff until the log takes them (or they are stale): no sandbox
//   stays in a transitional state while the log works.
// - Commands for one sandbox are decided one at a time, in arrival order; at most one
//   runtime lifecycle step per sandbox is in flight. While a step is in flight the state
//   machine (docs/state-machine.md) answers other commands.
// - A create whose tenant and client request id repeat an earlier create is answered with
//   the sandbox that create made (also after a restart).
// - Timers (idle, lifetime, retention, storage sampling) are derived from state and
//   survive restarts. Blocking driver calls run on a dedicated pool, never on CAF threads
//   (only a driver that never blocks, `driver_never_blocks`, is called on them).
// - `reply_fn` runs on an actor's thread: it must be quick and must not block.
//
// Operations on a sandbox's processes and files (exec, read_file, ... below) go through the
// sandbox's actor too: the state machine decides whether the sandbox's status allows them
// (docs/state-machine.md), the driver of the sandbox's runtime does them on the blocking
// pool, and the caller gets the driver's own answer. A change is logged before it reaches
// the sandbox (exec_started, file_op_requested, exec_kill_requested) and its outcome after
// (exec_finished, file_op_finished); a read is logged (file_read) after it was served and
// before it is answered. Their `done` callbacks run on an actor's or a pool thread: quick,
// never blocking. An output sink runs on the pool thread that runs the exec, in the order
// the output arrived, and always before the exec's `done`; a slow sink slows that exec only.
#pragma once

#include "actors/command_reply.hpp"
#include "actors/directory_stats.hpp"
#include "actors/op_result.hpp"
#include "actors/pool_table.hpp"
#include "actors/recovery.hpp"
#include "actors/timer_queue.hpp"
#include "base/sha256.hpp"
#include "events/event_log.hpp"
#include "runtime/driver.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::actors {

struct control_plane_options {
  events::event_log* log = nullptr; // not owned; outlives the control plane
  // The node's drivers by the runtime kind a create names (`created.runtime`); not owned. A
  // create naming a kind missing here is refused (invalid_argument naming the kinds held).
  std::map<events::runtime_kind, runtime::driver*> drivers;
  events::runtime_kind default_runtime = events::runtime_kind::runsc;
  // The runtime kinds whose sandboxes may have a network (mode allow list or all): their
  // driver has a link range and the node enforces egress on it (docs/network.md). A create
  // asking for a network on another kind is refused (invalid_argument).
  std::set<events::runtime_kind> networked;
  // A single driver for every runtime kind (tests, benchmarks); used when `drivers` is empty.
  runtime::driver* driver = nullptr;
  std::string data_dir;              // snapshots go to <data_dir>/snapshots
  clock_fn clock;                    // empty: the system clock
  std::size_t runtime_threads = 8;   // the blocking pool
  std::size_t exec_threads = 64;     // execs at once (each holds a thread while it runs)
  std::size_t scheduler_threads = 0; // CAF's; 0: CAF's default
  // The driver's lifecycle calls and usage() are quick in-memory changes that never block
  // (runtime::driver::never_blocks(): the hollow driver without latency or sync, for
  // benchmarks and tests). Lifecycle steps and storage samples then run on the sandbox
  // actor's own thread instead of the blocking pool (two thread hand-offs fewer per step);
  // exec still runs on the pool. Refused (invalid argument) for a driver that can block.
  bool driver_never_blocks = false;
  std::chrono::milliseconds timer_poll{1000}; // how often timers look at a manual clock
  // An idle paused, deleted (or absent) sandbox's actor is passivated after this long.
  std::chrono::milliseconds passivate_after{5000};
  // Running and paused sandboxes get a storage_sampled event this often (and at pause).
  events::nanoseconds storage_sample_interval = std::chrono::minutes(10);
  // Told which template each live sandbox uses (created.content.id), for the template
  // registry's "in use" rule: once for every live sandbox recovery found, before the first
  // command, then whenever a sandbox's `created` (in_use) or `deleted` (not) is durable. Runs
  // on an actor's thread: it must be quick and must not block. May be empty.
  std::function<void(const std::string& sandbox_id, const std::string& template_id, bool in_use)>
    template_use;
  // A background snapshot is taken whenever this many records were appended since the
  // last one; 0 disables them (snapshot_now still works).
  std::uint64_t snapshot_every_records = 500000;
  // Warm pools to keep from the start (docs/pools.md); set_pool changes them later.
  std::vector<pool_settings> pools;
  // How a pool's key becomes the spec its sandboxes are created with (the template's
  // content); empty: the key alone, with no template content.
  pool_spec_fn pool_spec;
};

struct request;

// Who asks for an operation: the tenant (a sandbox of another tenant is not_found), the
// principal and the correlation id the operation's events carry.
struct caller {
  std::string tenant;
  std::string principal;
  std::string correlation_id;
};

// One process to run in a sandbox. It sees the sandbox's environment (create's `env`),
// overridden by its own `env`. Secret values (env_var::secret) reach the driver only; the
// log gets their names and SHA-256.
struct exec_request {
  std::string exec_id; // empty: the control plane chooses one (the reply names it)
  std::vector<std::string> argv;
  std::vector<events::env_var> env;
  std::string cwd = "/";
  std::string user; // "" = root; user[:group] of the sandbox's /etc/passwd (exec_started)
  std::optional<std::string> stdin_data;          // logged as its size and SHA-256
  std::function<bool(std::string&)> stdin_source; // streamed stdin, pulled until false
  std::chrono::milliseconds timeout{0};           // 0: none, it runs until it ends
  std::uint64_t max_output_bytes = 0;             // per stream; 0: the sandbox's limit
};
// Receives an exec's output as it arrives (see the header comment for its thread).
using output_sink = std::function<void(runtime::output_stream, std::string_view)>;

class control_plane {
public:
  // Recovers, then starts the actors. Throws on faults (a damaged log, a runtime that
  // cannot be listed).
  explicit control_plane(control_plane_options options);
  // Stops taking commands, lets appends in flight complete, stops every actor.
  ~control_plane();
  control_plane(const control_plane&) = delete;
  control_plane& operator=(const control_plane&) = delete;

  // Sends `c` to sandbox `sandbox_id`. For a create, an empty id lets the directory choose
  // one (the reply's state names it). A create's `spec.env` gives secret variables with
  // their value: the log gets only the name and that it is secret (nothing derived from it),
  // the driver gets the value. `spec.runtime` chooses the driver (control_plane_options).
  void submit(std::string sandbox_id, command c, reply_when when, reply_fn done);

  // submit, and wait for the reply.
  command_reply call(std::string sandbox_id, command c, reply_when when = reply_when::settled);

  // The sandbox's durable state, as the caller's tenant sees it (not_found otherwise).
  // A query: it decides nothing and appends nothing.
  command_reply get(std::string sandbox_id, std::string tenant);
  // get, answered through `done` (on an actor's thread, like submit's replies).
  void query(std::string sandbox_id, std::string tenant, reply_fn done);

  // --- processes ---------------------------------------------------------------------------
  // Runs a process and answers with its result once its exec_finished is durable (exit
  // code, signal, timed out, OOM-killed, truncated, duration, byte counts and SHA-256 of
  // the output). `sink` (may be empty) gets the output before `done` is called.
  void exec(std::string sandbox_id, caller who, exec_request r, output_sink sink,
            op_done<events::exec_finished> done);
  // Starts a background process: answered with its exec id once its exec_started is
  // durable; its output goes to `sink` (may be empty: then only counted and hashed).
  void start_exec(std::string sandbox_id, caller who, exec_request r, output_sink sink,
                  op_done<std::string> done);
  // The sandbox's execs in flight, as their exec_started events.
  void list_execs(std::string sandbox_id, std::string tenant,
                  op_done<std::vector<events::exec_started>> done);
  // Answers when the exec's exec_finished is durable, at once for one that finished
  // recently (the last results of each sandbox are kept, a bounded number); not_found for
  // an exec id the sandbox does not know (or no longer remembers).
  void wait_exec(std::string sandbox_id, std::string tenant, std::string exec_id,
                 op_done<events::exec_finished> done);
  // Sends `signal` to an exec in flight, once its exec_kill_requested is durable.
  void kill_exec(std::string sandbox_id, caller who, std::string exec_id, int signal,
                 op_done<events::exec_kill_requested> done);

  // --- files (paths inside the sandbox's root) -----------------------------------------------
  void read_file(std::string sandbox_id, caller who, std::string path, op_done<std::string> done);
  // The same read, with the content's SHA-256 as its file_read event records it (computed once,
  // on the pool, for both).
  struct file_content {
    std::string bytes;
    sha256_digest sha256{};
  };
  void read_file_with_digest(std::string sandbox_id, caller who, std::string path,
                             op_done<file_content> done);
  // The reply's value is the file_op_finished event (bytes and SHA-256 as written).
  void write_file(std::string sandbox_id, caller who, std::string path, std::string content,
                  std::uint32_t mode, op_done<events::file_op_finished> done);
  void list_dir(std::string sandbox_id, caller who, std::string path,
                op_done<runtime::dir_listing> done);
  void stat(std::string sandbox_id, caller who, std::string path, op_done<runtime::file_info> done);
  void make_dir(std::string sandbox_id, caller who, std::string path, bool parents,
                std::uint32_t mode, op_done<events::file_op_finished> done);
  // A file, or a directory: an empty one, or with its contents when `recursive`.
  void remove_path(std::string sandbox_id, caller who, std::string path, bool recursive,
                   op_done<events::file_op_finished> done);
  void rename_path(std::string sandbox_id, caller who, std::string from, std::string to,
                   op_done<events::file_op_finished> done);

  // --- warm pools (docs/pools.md) ----------------------------------------------------------
  // Starts the pool of `s.key`, or gives an existing one these settings; invalid_argument
  // for settings check() refuses or a runtime the node does not have.
  std::optional<events::error> set_pool(const pool_settings& s);
  // Ends the pool of `key`: it makes no more sandboxes, deletes its ready ones and goes once
  // its creates in flight are answered. False when there is no such pool.
  bool remove_pool(const pool_key& key);
  // A ready sandbox of the pool of `key` made of template content `content_id`, handed out
  // once: `done` gets its id, or nullopt when there is none (or no such pool). `done` runs on
  // an actor's thread (quick, never blocking). The caller claims it (cmd::claim), or says
  // why not with return_to_pool.
  void take_from_pool(const pool_key& key, std::string content_id,
                      std::function<void(std::optional<std::string>)> done);
  // A taken sandbox whose claim was never sent (`discard` false: ready again), or whose claim
  // was refused (`discard` true: the pool deletes it).
  void return_to_pool(const pool_key& key, std::string sandbox_id, std::string content_id,
                      bool discard);
  // What every pool holds, in key order; pools that do not answer within `limit` are left out.
  std::vector<pool_figures> pools(std::chrono::milliseconds limit = std::chrono::seconds(5));
  // For a clean stop: every pool makes nothing more and deletes its ready sandboxes; returns
  // once their deletes settled (true) or `limit` passed (false). The pools stay, empty. A pool
  // sandbox holds no tenant's data, and deleted it holds nothing of the host's either (after a
  // crash they are adopted instead).
  bool drain_pools(std::chrono::milliseconds limit);
  // --- snapshots (docs/snapshots.md) ---------------------------------------------------------
  // Takes snapshot `snapshot_id` (base/snapshot_id.hpp, chosen by the caller) of the sandbox's
  // writable layer: snapshot_requested logged, the driver's snapshot, snapshot_taken logged,
  // answered with it (its outcome failed with the driver's error when it could not be taken).
  void snapshot(std::string sandbox_id, caller who, std::string snapshot_id, std::string name,
                op_done<events::snapshot_taken> done);
  // Deletes a snapshot of sandbox `sandbox_id` (its source, deleted or not): snapshot_deleted
  // logged, then the driver's remove_snapshot. The caller has checked that it exists and is
  // the tenant's (a deleted sandbox is still its tenant's in the log).
  void delete_snapshot(std::string sandbox_id, caller who, std::string snapshot_id,
                       op_done<events::snapshot_deleted> done);

  const recovery_report& recovery() const;
  // What the directory reports; `answered` is false when it did not within `limit` (a
  // metrics scrape must not hang on a busy directory).
  directory_stats stats(std::chrono::milliseconds limit = std::chrono::seconds(5));
  // Brings every partition's snapshot up to the log's end now. Returns records replayed.
  std::uint64_t snapshot_now();

private:
  void send(std::shared_ptr<request> r);
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::actors
