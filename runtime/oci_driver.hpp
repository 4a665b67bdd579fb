// oci_driver — sandboxes as OCI containers run by `runsc` (gVisor, systrap platform,
// exclusive file access, network none) or `crun` (namespaces with a user namespace,
// seccomp), each on an overlay of a template and its own writable layer. An older runsc
// (no systrap) is refused by oci_unavailable() (oci_driver.cpp).
//
// On disk, under the data directory (docs/runtime.md "On disk" gives every mode):
//   templates/                      see template_store.hpp
//   state/<runtime>/                the runtime's own state (--root)
//   helpers/exec-guard              bound into every sandbox (exec_guard.hpp)
//   layers.img, layers/             the layer pool (layer_pool.hpp); layers/<id>/upper and
//                                   work are a sandbox's writable layer (a btrfs subvolume
//                                   with a qgroup limit) and overlayfs's work directory
//   sandboxes/<id>/sandbox.json     status, template, limits, host id base (sandbox_record.hpp)
//   sandboxes/<id>/lower            the template, idmapped to the sandbox's host ids; for a
//                                   template of layers (layer_store.hpp), lower/<i> is layer
//                                   i (0 the lowest), each idmapped
//   sandboxes/<id>/merged           the overlay, mounted unless filesystem-paused
//   sandboxes/<id>/config.json      the sandbox directory is its OCI bundle (oci_spec.hpp)
//   netns/<id>, netns/<id>.resolv   a networked sandbox's namespace (a bind mount) and the
//                                   resolv.conf naming its resolver (sandbox_link.hpp)
//   removing/, spare/               removed sandboxes being deleted, skeletons for the next
//                                   create (removal_queue.hpp)
// Cgroups: /sandboxd/<instance>-<id> in every v1 controller, <instance> derived from the
// data directory so that two drivers on two data directories never share one.
//
// Pause modes: filesystem ends every process (the container is deleted), syncs and
// unmounts the layer; resume makes a fresh container on it. memory freezes the cgroup
// (crun and the current runsc: `pause`, `resume`); only with an older runsc, which
// sandboxd never runs, does it checkpoint into sandboxes/<id>/checkpoint and restore. A
// timed-out exec has its whole process tree stopped and killed.
//
// Differences between the two runtimes, by design of gVisor: with runsc, the memory
// and pids limits bound the host cgroup of the whole sandbox (its kernel included), so
// a process that exceeds them ends the sandbox (status `stopped`, exec reports
// oom_killed when the memory limit was the cause); with crun they bound the processes
// and the OOM killer or fork() failing stops only the offender.
//
// The driver makes this process a child subreaper (orphan_reaper.hpp).
#pragma once

#include "runtime/agent_hub.hpp"
#include "runtime/data_entry.hpp"
#include "runtime/driver.hpp"
#include "runtime/exec_registry.hpp"
#include "runtime/exec_user.hpp"
#include "runtime/id_map.hpp"
#include "runtime/layer_pool.hpp"
#include "runtime/layer_store.hpp"
#include "runtime/orphan_reaper.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/removal_queue.hpp"
#include "runtime/runtime_cli.hpp"
#include "runtime/sandbox_link.hpp"
#include "runtime/sandbox_locks.hpp"
#include "runtime/sandbox_record.hpp"
#include "runtime/template_store.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace sandboxd::runtime {

struct oci_options {
  oci_runtime runtime = oci_runtime::runsc;
  // Created if missing; no ',' or ':' in it (overlay mount options). When a directory
  // above it is not searchable by others, the driver works through a bind of it under
  // `entry_root` (data_entry.hpp).
  std::string data_dir;
  std::string entry_root = "/run/sandboxd";
  std::string runtime_path; // empty: looked up in PATH
  // Host ids of sandboxes: `id_ranges_count` ranges of 65536 from `id_ranges_first`, one
  // per sandbox (id_map.hpp). Keep them free of host users and /etc/subuid ranges.
  std::uint32_t id_ranges_first = 1u << 30;
  std::uint32_t id_ranges_count = 16384;
  // The writable layers' pool (layer_pool.hpp): its size when first made (0: 64 GiB, at
  // most half the free space) and a sandbox's disk limit when it asks for 0.
  std::uint64_t layer_pool_bytes = 0;
  std::uint64_t default_disk_bytes = 10ull << 30;
  // The IPv4 block the links of sandboxes with a network are numbered from (a /30 each,
  // sandbox_link.hpp), "10.200.0.0/17"; empty: every create with a network is refused. Two
  // drivers on one host need blocks that do not overlap.
  std::string link_range;
  // Names the links' interfaces ("sx" + its first 6 characters, sandbox_link.hpp): the
  // node's, shared by its drivers so that one egress table covers them all; empty: the
  // driver's own (a hash of data_dir).
  std::string link_instance;
  // The sandbox's first process is the agent (agent_hub.hpp): execs and file changes go
  // through it. Off (or for a container made without it), execs are the runtime's own
  // (`crun exec`, `runsc exec`) under the exec guard.
  bool agent = true;
  // How long the host waits for an answer of an agent, and for one to connect, before the
  // sandbox is failed.
  std::chrono::milliseconds agent_answer{10000};
  std::chrono::milliseconds agent_connect{10000};
  // The node's template layers (layer_store.hpp), shared by its drivers; without it only
  // the driver's own templates (template_store.hpp) can be used.
  std::shared_ptr<layer_store> template_layers;
};

// Why `runtime` cannot run sandboxes on this machine, or nullopt when it can (an older
// runsc, without systrap and child subreapers, cannot: runsc_binary.hpp).
std::optional<std::string> oci_unavailable(oci_runtime runtime);

class oci_driver final : public driver {
public:
  // Throws std::invalid_argument for a data directory the overlay options cannot hold.
  explicit oci_driver(oci_options options);
  // With no sandbox left, unmounts what the runtime keeps mounted in its state directory
  // (runsc's null-netns) and, through the layer pool, the pool.
  ~oci_driver() override;

  std::string_view name() const override;
  void set_failure_listener(failure_listener l) override;
  outcome<sandbox_info> create(const create_request& request) override;
  outcome<void> start(const std::string& id) override;
  outcome<exec_result> exec(const std::string& id, const exec_request& request) override;
  outcome<void> signal_exec(const std::string& id, const std::string& exec_id, int signal) override;
  outcome<void> resize_exec(const std::string& id, const std::string& exec_id, std::uint16_t cols,
                            std::uint16_t rows) override;
  outcome<void> pause(const std::string& id, pause_mode mode) override;
  outcome<void> resume(const std::string& id) override;
  outcome<void> remove(const std::string& id) override;
  outcome<void> set_env(const std::string& id,
                        const std::vector<std::pair<std::string, std::string>>& env) override;
  outcome<std::string> read_file(const std::string& id, const std::string& path) override;
  outcome<void> write_file(const std::string& id, const std::string& path, std::string_view content,
                           std::uint32_t mode) override;
  outcome<dir_listing> list_dir(const std::string& id, const std::string& path) override;
  outcome<file_info> stat(const std::string& id, const std::string& path) override;
  outcome<void> make_dir(const std::string& id, const std::string& path, bool parents,
                         std::uint32_t mode) override;
  outcome<void> remove_path(const std::string& id, const std::string& path,
                            bool recursive) override;
  outcome<void> rename_path(const std::string& id, const std::string& from,
                            const std::string& to) override;
  outcome<usage_info> usage(const std::string& id) override;
  outcome<sandbox_info> inspect(const std::string& id) override;
  outcome<std::vector<sandbox_info>> list() override;
  outcome<writable_layer> open_writable_layer(const std::string& id) override;
  outcome<snapshot_info> snapshot(const std::string& id, const std::string& snapshot_id) override;
  outcome<void> remove_snapshot(const std::string& snapshot_id) override;
  outcome<std::vector<std::string>> list_snapshots() override;

  // The runtime command line this driver uses, without the subcommand
  // (e.g. {"/usr/bin/runsc", "--root=...", "--network=none", ...}); for tests and the
  // benchmark's raw comparison.
  std::vector<std::string> runtime_command() const { return cli_.command(); }
  // The path the driver works through for its data directory: the data directory, or its
  // bind under entry_root (data_entry.hpp).
  const std::string& working_dir() const { return options_.data_dir; }
  // The host path of the exec guard bound into its sandboxes (exec_guard.hpp).
  std::string exec_guard_path() const { return options_.data_dir + "/helpers/exec-guard"; }
  // Which runtime binary this driver runs and what it can do (runsc_binary.hpp).
  const std::string& runtime_note() const { return cli_.note(); }
  // Whether a memory pause freezes the sandbox in place (runtime_cli.hpp).
  bool freezes() const { return cli_.freezes(); }
  // Whether runtime calls must run in a mount namespace without the cgroup2 mount.
  bool hides_cgroup2() const { return cli_.hides_cgroup2(); }
  // The cgroup path of a sandbox (e.g. /sandboxd/1a2b3c4d-sb1).
  std::string cgroup_path(const std::string& id) const;
  // The container id the runtime knows a sandbox by: <instance>-<id>.c. runsc names
  // host-wide abstract sockets after it (so it carries the instance) and accepts any
  // unambiguous prefix of an id (so no id may be a prefix of another: ids hold no '.').
  std::string cid(const std::string& id) const;
  // Blocks until the files of every sandbox removed so far are deleted (remove() returns
  // once the directory is out of sandboxes/; the deletion runs in the background).
  void drain_removals() { removals_.drain(); }
  // Why the agent link of a sandbox failed, or nullopt (agent_hub.hpp).
  std::optional<std::string> agent_failure(const std::string& id) { return agents_.failure(id); }

private:
  // Runs the runtime's `step` for sandbox `id`; its failure is an internal error naming
  // the step and quoting the runtime.
  outcome<void> cli_step(const std::string& id, const char* step,
                         const std::vector<std::string>& args, bool linked = false);

  std::string dir(const std::string& id) const { return sandbox_dir(options_.data_dir, id); }
  // Whether sandboxes/<id> exists (by handle; `id` must be one plain path component).
  bool has_dir(const std::string& id) const;
  // sandboxes/<id> opened by handle beneath sandboxes/; throws std::system_error if missing.
  unique_fd sandbox_fd(const std::string& id) const;
  overlay_dirs overlay_of(const sandbox_record& r) const;
  // The sandbox's root filesystem: lower/ (its template, idmapped to its host ids) and the
  // overlay on merged/; mount_rootfs mounts what is missing, unmount_rootfs both.
  void mount_rootfs(const sandbox_record& r);
  void unmount_rootfs(const sandbox_record& r, bool flush = true);
  // A template of layers: lower/<i> is layer i of the layer store, idmapped (all in one
  // user namespace); unmount_layers unmounts and removes them.
  void mount_layers(const sandbox_record& r);
  void unmount_layers(const sandbox_record& r);
  // Mounts the overlay if needed, writes config.json and has the runtime create the
  // container; with `sync_new_record`, also fsyncs the sandbox's first record.
  outcome<void> create_container(const sandbox_record& r, bool sync_new_record = false);
  // Starts the created container; with crun, returns once its init has become the
  // sandbox's process (so that an exec can join it).
  outcome<void> start_container(const sandbox_record& r);
  // The link of a networked sandbox (its record's), rebuilt from the record.
  std::optional<sandbox_link> link_of_record(const sandbox_record& r) const;
  const std::string& link_instance() const {
    return options_.link_instance.empty() ? instance_ : options_.link_instance;
  }
  // Kills and deletes the container; `frozen` when crun may have it frozen.
  void delete_container(const std::string& id, bool frozen);
  std::optional<std::string> runtime_status(const std::string& id) const;
  void refresh_status(sandbox_record& r);
  std::uint64_t oom_kills(const std::string& id) const;
  // A file change in a running sandbox made through the sandbox's own kernel, by the
  // guard (exec_guard.hpp) as the sandbox's root, for runsc with exclusive file access:
  // the guard's `args`, `content` on its stdin; errors name `path`.
  outcome<void> change_through_sandbox(const sandbox_record& r, const std::string& path,
                                       std::vector<std::string> args,
                                       std::string_view content = {});
  // Whether file changes of the sandbox must go through it (change_through_sandbox).
  bool changes_through_sandbox(const sandbox_record& r) const;

  // The agent (oci_agent.cpp). Whether a new container of `r` gets it as its first process.
  bool uses_agent(const sandbox_record& r) const { return options_.agent && r.id_base != 0; }
  // Makes <sandbox>/agent (root, group = the sandbox's root, 0710) and listens there; with
  // `fresh` (a new container) a link of an earlier container goes. Throws on faults.
  void listen_for_agent(const sandbox_record& r, bool fresh);
  // Unlinks <sandbox>/agent and its socket (remove: the spare skeleton has none).
  void remove_agent_dir(const std::string& id);
  // An exec or a file change through the sandbox's agent: `spawn` with the request's stdin,
  // output callback, output cap and exec id (for signal_exec).
  // `locked`: the caller holds the sandbox's lock.
  outcome<exec_result> exec_through_agent(const sandbox_record& r, agent_spawn spawn,
                                          const exec_request& req, bool locked = false);
  // The runtime's own exec (`crun exec`, `runsc exec`) under the guard (oci_exec.cpp).
  // `user`: who the program runs as (the runtime switches to it); null: root.
  outcome<exec_result> exec_through_runtime(const sandbox_record& r, const exec_request& req,
                                            const exec_user* user = nullptr);
  // On the failure thread: a sandbox whose agent link failed has its container killed and is
  // reported to the listener, unless its container ended on its own (then it is `stopped`).
  void on_agent_failure(const std::string& id, const std::string& reason);
  void failure_loop();
  // Runs f(root, record) for a change: direct on the root, or `through` the sandbox.
  template <class Direct, class Through>
  outcome<void> change_files(const std::string& id, Direct&& direct, Through&& through);

  // Runs f(merged root, record) with the root filesystem mounted (for this call only when
  // the sandbox is filesystem-paused).
  template <class F>
  auto with_files(const std::string& id, bool write, F&& f)
    -> decltype(f(std::string(), sandbox_record()));

  data_entry entry_; // first: it outlives every member that works through it
  oci_options options_;
  runtime_cli cli_; // every difference between runsc and crun
  std::string instance_;
  unique_fd sandboxes_fd_; // <data>/sandboxes: every sandbox directory is reached through it
  template_store templates_;
  sandbox_locks locks_;
  orphan_reaper::user reaper_;
  removal_queue removals_;
  layer_pool layers_;
  id_ranges ids_;
  std::optional<link_range> links_; // options_.link_range, parsed
  std::mutex init_pids_mu_;
  std::map<std::string, pid_t> init_pids_; // crun: the init of each container made here
  exec_registry execs_;
  // Agent failures, reported by a thread of their own (agent_hub's callback must not block).
  std::mutex failures_mu_;
  std::condition_variable failures_cv_;
  std::deque<std::pair<std::string, std::string>> failures_;
  bool failures_stop_ = false;
  failure_listener listener_;
  std::thread failure_thread_;
  agent_hub agents_; // last: its thread is gone before anything it reports to
};

} // namespace sandboxd::runtime
