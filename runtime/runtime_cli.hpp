// runtime_cli — the one place where runsc and crun differ, so that the OCI driver reads
// the same for both: the runtime's command line (flags, state root), how it is run
// (crun in a mount namespace without the cgroup2 mount), how a memory pause is done
// (a freeze of the cgroup, or runsc's checkpoint and restore), how an exec's pid file is
// handed over, how an exec's process tree is found and killed, and crun's start-up quirks
// (waiting for a started container's init, an exec that never started).
#pragma once

#include "runtime/child_process.hpp"
#include "runtime/memfd_file.hpp"

#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sandboxd::runtime {

enum class oci_runtime { crun, runsc };

const char* runtime_name(oci_runtime r);

// Where the runtime writes the pid of an exec's process (as its kernel knows it): crun
// writes a memfd in place; runsc writes a temporary file beside the name and renames it,
// so it gets a name in a private scratch directory (removed with the object).
class exec_pid_file {
public:
  exec_pid_file(oci_runtime runtime, const std::string& scratch_dir);
  ~exec_pid_file();
  exec_pid_file(const exec_pid_file&) = delete;
  exec_pid_file& operator=(const exec_pid_file&) = delete;
  // The runtime's exec flag naming this file.
  std::string flag() const;
  std::string read() const;

private:
  std::optional<memfd_file> memfd_;
  std::string scratch_path_;
};

// An exec's first process as the driver knows it. crun: a host process, held by pidfd
// (host_process.hpp) once it is found in the sandbox's cgroup (`cgroup`, the path below a
// controller's mount) and started at or after `not_before_ticks` (boot_ticks_now() when
// the exec began), and its tree is signalled through pidfds. runsc: a process of the
// sandbox's own kernel, signalled by number through `runsc kill`.
struct exec_process {
  std::string cid;
  std::string pid_text; // as the runtime wrote it
  std::string cgroup;
  unsigned long long not_before_ticks = 0;
};

class runtime_cli {
public:
  // Finds the runtime's binary (`runtime_path`, or PATH) and what it can do; the runtime
  // keeps its own state under `state_root`.
  runtime_cli(oci_runtime runtime, const std::string& runtime_path, std::string state_root);

  oci_runtime kind() const { return runtime_; }
  const char* name() const { return runtime_name(runtime_); }
  // Which binary runs and what it can do (runsc_binary.hpp).
  const std::string& note() const { return note_; }
  const std::string& state_root() const { return state_root_; }
  // The command line without the subcommand; with `linked`, for a sandbox with its own
  // network namespace (runsc: --network=sandbox, its netstack on the namespace's link).
  std::vector<std::string> command(bool linked = false) const;
  // Whether a memory pause freezes the sandbox in place (crun; the current runsc, whose
  // restore leaves exec'd processes stuck) rather than checkpointing it (older runsc).
  bool freezes() const { return runtime_ == oci_runtime::crun || runsc_current_; }
  // Whether runtime calls must run in a mount namespace without the cgroup2 mount.
  bool hides_cgroup2() const { return runtime_ == oci_runtime::crun; }
  // Whether write_file into a running sandbox must go through the sandbox's own kernel
  // (the current runsc, with exclusive file access, never looks at the layer behind its
  // back).
  bool writes_through_sandbox() const { return runtime_ == oci_runtime::runsc && runsc_current_; }
  // Whether an exec may fail to start at all and be retried (crun_startup.hpp).
  bool exec_may_fail_startup() const { return runtime_ == oci_runtime::crun; }

  struct output {
    bool ok;
    std::string text; // stdout on success, stderr and stdout on failure
  };
  // Runs `command(linked) + args` and waits for it (two minutes at most).
  output run(const std::vector<std::string>& args, bool linked = false) const;
  // process_options with `command(linked) + args` and the runtime's namespace choice.
  process_options options(const std::vector<std::string>& args, bool linked = false) const;

  // The arguments of `create`: with crun, a pid file for the container's init (which is
  // re-parented to this process, and waited for after start).
  std::vector<std::string> create_args(const std::string& bundle, const std::string& cid,
                                       const std::string& init_pid_file) const;
  bool reports_init_pid() const { return runtime_ == oci_runtime::crun; }
  // After `start`: with crun, returns once the container's init (`init`, 0 when unknown)
  // has left crun's own code and become the sandbox's process, so that an exec can join
  // it (before, the exec's setns fails with EPERM).
  void await_started_init(pid_t init) const;

  // Stops the process tree of an exec until it stops growing, then kills every member.
  void kill_exec_tree(const exec_process& e) const;
  // Sends `signal` to every process below the exec's first process (its guard): SIGKILL
  // to the tree stopped until it stops growing, other signals to the tree as it stands
  // now; false when none was found.
  bool signal_exec_tree(const exec_process& e, int signal) const;

private:
  // runsc: stops every process below `root` in the sandbox's kernel until the tree stops
  // growing; its members.
  std::set<pid_t> stop_sandbox_tree(const std::string& cid, pid_t root) const;

  oci_runtime runtime_;
  std::string bin_;
  std::string note_;
  bool runsc_current_ = false; // runsc_binary.hpp
  bool runsc_oci_seccomp_ = false;
  std::string state_root_;
};

} // namespace sandboxd::runtime
