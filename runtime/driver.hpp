// driver — the one interface to a sandbox runtime (runsc, crun, hollow).
//
// Contract every driver keeps:
// - Calls are synchronous and may block (hundreds of ms for runsc); run them off any
//   event loop. A driver is thread-safe: calls for different sandboxes run
//   concurrently; calls for one sandbox are serialised where they change its state
//   (create, start, pause, resume, remove), while exec and file operations may run
//   concurrently with each other.
// - Domain outcomes are values (`outcome<T>` with an `errc`), never exceptions.
// - A sandbox's root filesystem is an overlay: a read-only template below, the
//   sandbox's own writable layer above (the layer is what persists across a
//   filesystem pause and what `usage().writable_bytes` measures).
// - File operations (read, write, list, stat, make_dir, remove_path, rename_path)
//   resolve every path inside the sandbox's root: `..`, absolute
//   symlinks and symlink chains planted by code in the sandbox never reach a host
//   file. They work while running and while filesystem-paused (offline); changes are
//   refused (conflict) while memory-paused, reads work in every status.
// - `list()` reports every sandbox the driver has on disk, also after a restart of the
//   process, so a caller can reconcile after a crash.
// - `remove()` leaves no mount, process, cgroup, runtime state or directory behind.
#pragma once

#include "runtime/errc.hpp"
#include "runtime/unique_fd.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::runtime {

// Resource limits of one sandbox. Zero means "no limit" for memory, cpu and pids.
struct limits {
  std::uint64_t memory_bytes = 512ull << 20;
  std::uint32_t cpu_millis = 1000; // 1000 = one CPU's worth of time per second
  std::uint32_t pids = 512;
  std::uint64_t max_output_bytes = 1ull << 20; // per exec, stdout and stderr each
  std::uint64_t max_file_bytes = 64ull << 20;  // per read_file / write_file
  // Writable layer size, enforced by the kernel (writes past it fail with EDQUOT inside
  // the sandbox); 0 = the node's default.
  std::uint64_t disk_bytes = 0;
  // Most entries one list_dir returns (the listing says when there were more).
  std::uint32_t max_dir_entries = 10000;
};

// Network of a sandbox: `none`, a private loopback and nothing else; `outbound`, its own
// network namespace joined to the host by a veth pair (sandbox_link.hpp), whose host side
// reaches only what sandboxd's egress proxy and resolver relay (network/, docs/network.md).
// A driver without links (hollow, or an OCI driver given no link range) refuses outbound
// with invalid_argument.
enum class network_policy { none, outbound };

// The host's view of a sandbox's link: where its traffic arrives and what it is sent as.
struct network_link {
  std::string interface;        // the host side ("sx...")
  std::string host_address;     // the host side's address: the sandbox's gateway
  std::string sandbox_address;  // the sandbox's own address
  std::string netns_path;       // the sandbox's network namespace (bind-mounted)
  std::string sandbox_address6; // its IPv6 address (refused on the host side; sandbox_link.hpp)
  std::string tenant;           // whose sandbox (create_request::tenant): the egress proxy's
                                // commands for its connections carry it
  bool operator==(const network_link&) const = default;
};

struct create_request {
  std::string id;                     // [a-z0-9_-]{1,64}, unique per driver
  std::string template_name = "base"; // a template known to the template store
  // The template's layers by digest (layer_store.hpp), lowest first. When set, the root
  // filesystem is these layers (which must be in the driver's layer store) under the
  // writable layer, and template_name only names them; empty: template_name is looked up in
  // the driver's own template store (`base`).
  std::vector<std::string> layers;
  runtime::limits limits;
  network_policy network = network_policy::none;
  std::string tenant; // the sandbox's, kept with its link (network_link::tenant)
  // Environment every exec of the sandbox sees, kept by the driver with the sandbox (in its
  // record, mode 0600 under the 0700 data directory: secret values live here and nowhere in
  // the event log) so it survives pauses and restarts of the process.
  std::vector<std::pair<std::string, std::string>> env;
  // A fork (docs/snapshots.md): the writable layer starts as a writable copy-on-write snapshot
  // of this snapshot (one of this driver's, snapshot() below) instead of empty; the template
  // must be the one the snapshot's sandbox had. Empty: a fresh layer.
  std::string from_snapshot;
};

// A snapshot of a sandbox's writable layer as the driver took it.
struct snapshot_info {
  std::uint64_t layer_bytes = 0;      // the sandbox's layer (btrfs referenced bytes) at the time
  std::uint64_t referenced_bytes = 0; // the snapshot's qgroup: every block it reaches
  std::uint64_t exclusive_bytes = 0;  // the blocks only it holds (what deleting it frees)
};

enum class output_stream { out, err };

struct exec_request {
  std::string exec_id;           // unique among the sandbox's running execs; empty: not signalable
  std::vector<std::string> argv; // argv[0] is looked up in PATH when it has no '/'
  // Over the sandbox's environment (create_request::env), for this exec only.
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd = "/";
  // Who runs it: "" (or "root", "0") the sandbox's root; else `user[:group]`, names or ids of
  // the sandbox's /etc/passwd and /etc/group (runtime/exec_user.hpp), read from its root
  // filesystem at each exec. A name that is not there, or an id above 65535, is
  // invalid_argument. HOME is the user's home unless the environment names one.
  std::string user;
  std::optional<std::string> stdin_data; // all of stdin at once, or
  // pulled by the driver until it returns false (end of stdin); may block. Set at most one;
  // with neither, stdin is at end of file at once. Once the process has ended, the driver
  // stops pulling (after the call in progress returns).
  std::function<bool(std::string& chunk)> stdin_source;
  std::chrono::milliseconds timeout{0}; // 0: none — runs until it ends or is killed
  std::uint64_t max_output_bytes = 0;   // per stream; 0: the sandbox's limit
  // Called with each chunk of output as it arrives, in order and before exec returns, up
  // to the output cap, from the calling thread. May block (the process then waits on
  // its output pipe). May be empty.
  std::function<void(output_stream, std::string_view)> on_output;
  // A terminal (a pty inside the sandbox, made by its agent) of this size, columns then rows
  // (1-4096 each), as the program's stdin, stdout and stderr: all its output is `out`, stdin
  // is its keyboard (none: no key is ever pressed). resize_exec changes the size while it
  // runs. Needs exec_id (to be resized) and the agent (invalid_argument for a container
  // without it; the hollow driver runs none).
  std::optional<std::pair<std::uint16_t, std::uint16_t>> terminal;
};

struct exec_result {
  int exit_code = -1; // -1 when the process was killed by a signal
  int signal = 0;     // the signal that ended it, 0 when it exited
  bool timed_out = false;
  bool oom_killed = false; // the memory limit was hit while it ran
  std::string stdout_data; // with on_output set: its first 64 KiB (the rest was streamed)
  std::string stderr_data;
  bool output_truncated = false; // more output than the cap was produced
  std::chrono::milliseconds duration{0};
};

enum class pause_mode { filesystem, memory };

enum class sandbox_status {
  created,           // the root filesystem exists; no process runs yet
  running,           // processes may run; exec is allowed
  paused_filesystem, // no process; the writable layer is synced and kept
  paused_memory,     // processes kept (frozen or checkpointed)
  stopped,           // its processes ended on their own (e.g. killed by the OOM killer)
};

const char* to_string(sandbox_status s);
const char* to_string(pause_mode m);

struct sandbox_info {
  std::string id;
  std::string template_name;
  sandbox_status status = sandbox_status::created;
  runtime::limits limits;
  std::optional<network_link> link; // network outbound only
};

enum class file_type { regular, directory, symlink, other };

struct file_info {
  file_type type = file_type::regular;
  std::uint64_t size = 0;
  std::uint32_t mode = 0; // permission bits
  std::int64_t mtime_ns = 0;
};

struct dir_entry {
  std::string name;
  file_info info;
};

struct dir_listing {
  std::vector<dir_entry> entries; // at most limits.max_dir_entries, in no particular order
  bool truncated = false;         // the directory holds more entries than were returned
};

struct usage_info {
  std::uint64_t writable_bytes = 0;          // bytes in the writable layer (storage billing)
  std::optional<std::uint64_t> memory_bytes; // current memory use, where known
  std::optional<std::uint64_t> cpu_ns;       // CPU time used, where known
};

// A sandbox's writable layer opened for reading what its processes changed (a template
// build step makes a layer of it, docs/templates.md). The tree is the overlay's upper
// directory as the kernel left it: whiteouts are 0/0 character devices, opaque directories
// carry trusted.overlay.opaque, and owners are host ids (the sandbox's id u is host id
// host_id_base + u). Its content was written by the sandbox: read it by handle only.
struct writable_layer {
  unique_fd dir; // O_RDONLY | O_DIRECTORY
  std::uint32_t host_id_base = 0;
};

// Called when a driver finds a sandbox broken outside any call it was making: its agent
// broke the protocol, missed a deadline or vanished (agent_hub.hpp). The driver has ended the
// sandbox's processes by then; `reason` names what happened.
using failure_listener = std::function<void(const std::string& id, const std::string& reason)>;

class driver {
public:
  virtual ~driver() = default;

  // Where failures go (from a thread of the driver; quick, never blocking). Set it before
  // sandboxes are used, and empty before the listener goes. Drivers that never find one
  // ignore it.
  virtual void set_failure_listener(failure_listener) {}

  // "runsc", "crun" or "hollow".
  virtual std::string_view name() const = 0;
  // True when create, start, pause, resume, remove and usage are quick in-memory changes
  // that never wait (no process, no sleep, no sync): such a driver may be called on an
  // actor's thread (control_plane_options::driver_never_blocks). False for real runtimes.
  virtual bool never_blocks() const { return false; }

  // Makes the sandbox's root filesystem and runtime state; status `created`.
  virtual outcome<sandbox_info> create(const create_request& request) = 0;
  // Starts its processes: created or stopped -> running.
  virtual outcome<void> start(const std::string& id) = 0;
  // Runs one process in a running sandbox and waits for it (or its timeout). A second
  // running exec with the same non-empty exec_id is conflict.
  virtual outcome<exec_result> exec(const std::string& id, const exec_request& request) = 0;
  // Signals every process the exec started (however it forked); not_found when no such exec
  // is running. Signal 0 only checks that it runs.
  virtual outcome<void> signal_exec(const std::string& id, const std::string& exec_id,
                                    int signal) = 0;
  // A terminal exec's new window size (exec_request::terminal): the program sees it (and gets
  // SIGWINCH) at once. not_found when no such exec runs; invalid_argument for an exec without
  // a terminal.
  virtual outcome<void> resize_exec(const std::string& id, const std::string& exec_id,
                                    std::uint16_t cols, std::uint16_t rows) {
    (void)cols;
    (void)rows;
    return make_error(errc::not_found, "no exec " + exec_id + " with a terminal runs in sandbox " +
                                         id + ": this driver runs no terminals");
  }
  // running -> paused_filesystem or paused_memory.
  virtual outcome<void> pause(const std::string& id, pause_mode mode) = 0;
  // paused_* -> running. After a filesystem pause, processes start afresh.
  virtual outcome<void> resume(const std::string& id) = 0;
  // From any state; removing an unknown id is not_found.
  virtual outcome<void> remove(const std::string& id) = 0;
  // Replaces the environment every later exec of the sandbox sees (create_request::env) in
  // its record, durably (fsynced) before it returns: a warm pool sandbox's claim gives it the
  // claiming tenant's environment (docs/pools.md). Nothing running is changed. Idempotent;
  // invalid_argument for a name or value create would refuse, not_found for an unknown id.
  virtual outcome<void> set_env(const std::string& id,
                                const std::vector<std::pair<std::string, std::string>>& env) = 0;

  virtual outcome<std::string> read_file(const std::string& id, const std::string& path) = 0;
  // Atomic and binary-safe; creates missing parent directories (mode 0755). Only the
  // permission bits of `mode` (0777) are kept: no setuid, setgid or sticky bit.
  virtual outcome<void> write_file(const std::string& id, const std::string& path,
                                   std::string_view content, std::uint32_t mode = 0644) = 0;
  // At most limits.max_dir_entries entries; `truncated` says when there were more.
  virtual outcome<dir_listing> list_dir(const std::string& id, const std::string& path) = 0;
  // Follows symlinks inside the sandbox's root.
  virtual outcome<file_info> stat(const std::string& id, const std::string& path) = 0;
  // A directory with the permission bits of `mode`; with `parents`, missing parents too
  // (0755) and an existing directory is no error (mkdir -p). Without: already there is
  // conflict, a missing parent not_found, a file on the way not_a_directory.
  virtual outcome<void> make_dir(const std::string& id, const std::string& path, bool parents,
                                 std::uint32_t mode = 0755) = 0;
  // A file or an empty directory; with recursive, a directory and everything in it — never
  // following a symlink out of the tree, whatever the sandbox does meanwhile. A non-empty
  // directory without recursive is conflict (and is left whole).
  virtual outcome<void> remove_path(const std::string& id, const std::string& path,
                                    bool recursive) = 0;
  // Both paths inside the sandbox's root; replaces an existing file like rename(2).
  virtual outcome<void> rename_path(const std::string& id, const std::string& from,
                                    const std::string& to) = 0;

  virtual outcome<usage_info> usage(const std::string& id) = 0;
  virtual outcome<sandbox_info> inspect(const std::string& id) = 0;
  // Every sandbox this driver has, in no particular order.
  virtual outcome<std::vector<sandbox_info>> list() = 0;

  // Snapshots of writable layers (docs/snapshots.md), named by a snapshot id
  // (base/snapshot_id.hpp; anything else is invalid_argument). snapshot() takes an immutable,
  // read-only copy of sandbox `id`'s writable layer in constant time: while running its
  // processes are frozen for the instant (the tree is one consistent state of the layer, no
  // write half in it), thawed after; filesystem- or memory-paused it is taken as it stands.
  // A snapshot outlives its sandbox until remove_snapshot(). conflict when `snapshot_id`
  // exists; invalid_argument for a driver that keeps no files.
  virtual outcome<snapshot_info> snapshot(const std::string& id, const std::string& snapshot_id) {
    (void)snapshot_id;
    return make_error(errc::invalid_argument, "runtime " + std::string(name()) +
                                                " keeps no files: sandbox " + id +
                                                " has no writable layer to snapshot");
  }
  // Deletes a snapshot (its blocks no other layer shares are freed); missing is fine.
  virtual outcome<void> remove_snapshot(const std::string& snapshot_id) {
    (void)snapshot_id;
    return {};
  }
  // The snapshots this driver holds, in no order (after a restart too).
  virtual outcome<std::vector<std::string>> list_snapshots() { return std::vector<std::string>{}; }

  // The writable layer of a filesystem-paused sandbox (no process runs; the layer is synced
  // and its overlay unmounted, so nothing changes it while it is read): conflict in any other
  // status; invalid_argument for a driver that keeps no files.
  virtual outcome<writable_layer> open_writable_layer(const std::string& id) {
    return make_error(errc::invalid_argument, "runtime " + std::string(name()) +
                                                " keeps no files: sandbox " + id +
                                                " has no writable layer to read");
  }
};

} // namespace sandboxd::runtime
