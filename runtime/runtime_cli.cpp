#include "runtime/runtime_cli.hpp"

#include "runtime/host_process.hpp"
#include "runtime/runsc_binary.hpp"
#include "runtime/small_text.hpp"

#include <atomic>
#include <csignal>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

// crun: the exec's first process (its guard), held when it is what `e` names: in the
// sandbox's cgroup and started after the exec began.
std::optional<host_process> exec_root(const exec_process& e) {
  pid_t pid = std::stoi(e.pid_text);
  return host_process::open(pid, [&](pid_t p, const proc_stat& s) {
    if (s.start_ticks < e.not_before_ticks)
      return false;
    std::istringstream lines(read_small_text("/proc/" + std::to_string(p) + "/cgroup"));
    const std::string tail = ":" + e.cgroup;
    for (std::string line; std::getline(lines, line);)
      if (line.size() > tail.size() &&
          line.compare(line.size() - tail.size(), tail.size(), tail) == 0)
        return true;
    return false;
  });
}

// The members of `tree` and their descendants in a `runsc ps` listing (columns UID PID
// PPID ...).
void add_descendants(std::set<pid_t>& tree, const std::string& ps) {
  std::istringstream lines(ps);
  std::string line;
  std::multimap<pid_t, pid_t> kids;
  std::getline(lines, line); // header
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string uid;
    pid_t p = 0, pp = 0;
    if (f >> uid >> p >> pp)
      kids.emplace(pp, p);
  }
  std::vector<pid_t> pending(tree.begin(), tree.end());
  while (!pending.empty()) {
    pid_t p = pending.back();
    pending.pop_back();
    auto [b, e] = kids.equal_range(p);
    for (auto it = b; it != e; ++it)
      if (tree.insert(it->second).second)
        pending.push_back(it->second);
  }
}

} // namespace

const char* runtime_name(oci_runtime r) {
  return r == oci_runtime::crun ? "crun" : "runsc";
}

exec_pid_file::exec_pid_file(oci_runtime runtime, const std::string& scratch_dir) {
  static std::atomic<std::uint64_t> counter{0};
  if (runtime == oci_runtime::crun)
    memfd_.emplace();
  else
    scratch_path_ =
      scratch_dir + "/" + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

exec_pid_file::~exec_pid_file() {
  if (!scratch_path_.empty())
    ::unlink(scratch_path_.c_str());
}

std::string exec_pid_file::flag() const {
  return memfd_ ? "--pid-file=" + memfd_->path() : "--internal-pid-file=" + scratch_path_;
}

std::string exec_pid_file::read() const {
  return memfd_ ? memfd_->read() : read_small_text(scratch_path_);
}

runtime_cli::runtime_cli(oci_runtime runtime, const std::string& runtime_path,
                         std::string state_root)
    : runtime_(runtime), state_root_(std::move(state_root)) {
  if (runtime_ == oci_runtime::runsc) {
    runsc_binary b = find_runsc(runtime_path);
    bin_ = b.path;
    runsc_current_ = b.current;
    runsc_oci_seccomp_ = b.oci_seccomp;
    note_ = b.note;
  } else {
    bin_ = runtime_path.empty() ? find_program("crun") : runtime_path;
    note_ = "crun " + bin_;
  }
}

std::vector<std::string> runtime_cli::command(bool linked) const {
  if (runtime_ == oci_runtime::crun)
    return {bin_, "--root=" + state_root_};
  const std::string network = linked ? "--network=sandbox" : "--network=none";
  // --overlay2=none: the sandbox's writes go to its layer on the host (paused reads and
  // storage billing read it), which is nosuid,nodev there.
  if (runsc_current_)
    return {bin_, "--root=" + state_root_, network, "--platform=systrap", "--file-access=exclusive",
            "--overlay2=none", "--oci-seccomp",
            // The agent connects to its host socket (docs/security.md, "The agent").
            "--host-uds=open"};
  std::vector<std::string> older = {bin_,
                                    "--root=" + state_root_,
                                    network,
                                    "--platform=ptrace",
                                    "--overlay2=none",
                                    "--file-access=shared"};
  if (runsc_oci_seccomp_)
    older.push_back("--oci-seccomp");
  return older;
}

process_options runtime_cli::options(const std::vector<std::string>& args, bool linked) const {
  process_options o;
  o.argv = command(linked);
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.hide_cgroup2 = hides_cgroup2();
  return o;
}

runtime_cli::output runtime_cli::run(const std::vector<std::string>& args, bool linked) const {
  process_options o = options(args, linked);
  o.max_output_bytes = 1 << 20;
  o.timeout = std::chrono::minutes(2);
  auto r = run_process(o);
  if (r.exit_code == 0)
    return {true, r.out};
  return {false, r.err + r.out};
}

std::vector<std::string> runtime_cli::create_args(const std::string& bundle, const std::string& cid,
                                                  const std::string& init_pid_file) const {
  std::vector<std::string> args = {"create", "--bundle", bundle};
  if (reports_init_pid())
    args.push_back("--pid-file=" + init_pid_file);
  args.push_back(cid);
  return args;
}

void runtime_cli::await_started_init(pid_t init) const {
  if (runtime_ != oci_runtime::crun || init <= 0)
    return;
  // `crun start` returns once it has told the init to go on, which may still be in crun's
  // own code: not dumpable, its memory owned by the host's user namespace. Its command
  // name changes at its execve.
  const std::string comm = "/proc/" + std::to_string(init) + "/comm";
  for (int i = 0; i < 2000; ++i) {
    std::string name = read_small_text(comm);
    if (name.empty() || name.rfind("crun", 0) != 0)
      break;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

std::set<pid_t> runtime_cli::stop_sandbox_tree(const std::string& cid, pid_t root) const {
  std::set<pid_t> tree{root};
  for (int round = 0; round < 10; ++round) {
    size_t before = tree.size();
    add_descendants(tree, run({"ps", cid}).text);
    for (pid_t p : tree)
      if (p != root)
        run({"kill", "--pid=" + std::to_string(p), cid, "STOP"});
    if (round > 0 && tree.size() == before)
      break;
  }
  tree.erase(root);
  return tree;
}

void runtime_cli::kill_exec_tree(const exec_process& e) const {
  if (e.pid_text.empty())
    return;
  if (runtime_ == oci_runtime::crun) {
    if (auto root = exec_root(e))
      kill_held_tree(*root);
    return;
  }
  // runsc: the processes live in gVisor's kernel, found with `runsc ps`.
  pid_t pid = std::stoi(e.pid_text);
  run({"kill", "--pid=" + std::to_string(pid), e.cid, "STOP"});
  for (pid_t p : stop_sandbox_tree(e.cid, pid))
    run({"kill", "--pid=" + std::to_string(p), e.cid, "KILL"});
  run({"kill", "--pid=" + std::to_string(pid), e.cid, "KILL"});
}

bool runtime_cli::signal_exec_tree(const exec_process& e, int signal) const {
  if (e.pid_text.empty())
    return false;
  // SIGKILL is sent to a stopped tree, so that nothing forked after a look at the tree
  // escapes it; other signals go to the tree as it stands.
  if (runtime_ == oci_runtime::crun) {
    auto root = exec_root(e);
    if (!root)
      return false;
    auto tree = signal == SIGKILL ? stop_held_tree(*root) : held_descendants(*root);
    for (auto& p : tree)
      p.signal(signal);
    return !tree.empty();
  }
  pid_t pid = std::stoi(e.pid_text);
  std::set<pid_t> tree;
  if (signal == SIGKILL) {
    tree = stop_sandbox_tree(e.cid, pid);
  } else {
    tree = {pid};
    add_descendants(tree, run({"ps", e.cid}).text);
    tree.erase(pid);
  }
  for (pid_t p : tree)
    run({"kill", "--pid=" + std::to_string(p), e.cid, std::to_string(signal)});
  return !tree.empty();
}

} // namespace sandboxd::runtime
