#include "runtime/oci_driver.hpp"

#include "runtime/beneath.hpp"
#include "runtime/child_process.hpp"
#include "runtime/data_entry.hpp"
#include "runtime/exec_guard.hpp"
#include "runtime/id_map.hpp"
#include "runtime/lifecycle_rules.hpp"
#include "runtime/memfd_file.hpp"
#include "runtime/oci_spec.hpp"
#include "runtime/rooted_fs.hpp"
#include "runtime/runsc_binary.hpp"
#include "runtime/tree_walk.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::runtime {
namespace {

std::string read_small(const std::string& path);

// A name in a private directory for a runtime to write a small file to (through a
// temporary file and a rename, as runsc does); removed with the object.
class scratch_file {
public:
  explicit scratch_file(const std::string& dir) {
    static std::atomic<std::uint64_t> counter{0};
    path_ = dir + "/" + std::to_string(::getpid()) + "." + std::to_string(counter++);
  }
  ~scratch_file() { ::unlink(path_.c_str()); }
  scratch_file(const scratch_file&) = delete;
  scratch_file& operator=(const scratch_file&) = delete;
  const std::string& path() const { return path_; }
  std::string read() const { return read_small(path_); }

private:
  std::string path_;
};

// crun's exec could not start the process at all: it printed "fail startup", or its
// failure to join the container's namespaces ("setns(pid=...): Operation not
// permitted", with or without "fail startup" after it), and nothing else.
bool crun_failed_startup(const process_result& p) {
  return p.exit_code != 0 && p.out.empty() &&
         (p.err == "fail startup\n" ||
          (p.err.rfind("setns(pid=", 0) == 0 &&
           p.err.find("Operation not permitted") != std::string::npos && p.err.size() < 256));
}

// Passes an exec's output on to the caller's callback, but holds stderr back while all of
// it so far could be crun's start-up failure text (and no stdout came): that text is
// dropped when the attempt is retried, and passed on otherwise.
class startup_filter {
public:
  startup_filter(std::function<void(output_stream, std::string_view)> to, bool enabled)
      : to_(std::move(to)), holding_(enabled) {}
  void take(output_stream s, std::string_view d) {
    if (holding_) {
      if (s == output_stream::err) {
        held_.append(d);
        if (!could_be_failure(held_))
          flush(); // not crun's text: pass on everything held, this chunk included
        return;
      }
      flush(); // stdout came: the program runs
    }
    if (to_ && !d.empty())
      to_(s, d);
  }
  void discard() { held_.clear(); }
  void flush() {
    holding_ = false;
    if (!held_.empty() && to_)
      to_(output_stream::err, held_);
    held_.clear();
  }

private:
  static bool could_be_failure(const std::string& t) {
    static const std::string fail = "fail startup\n", setns = "setns(pid=";
    if (t.size() > 256)
      return false;
    auto prefix_of = [&](const std::string& whole) {
      return whole.compare(0, std::min(whole.size(), t.size()), t, 0,
                           std::min(whole.size(), t.size())) == 0 &&
             t.size() <= whole.size();
    };
    return prefix_of(fail) || prefix_of(setns) || t.rfind(setns, 0) == 0;
  }

  std::function<void(output_stream, std::string_view)> to_;
  bool holding_;
  std::string held_;
};

// How long after an exec's timeout the driver stops waiting for its guard.
constexpr std::chrono::seconds k_guard_grace{5};

const char* runtime_name(oci_runtime r) {
  return r == oci_runtime::crun ? "crun" : "runsc";
}

std::string read_small(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// Writes `name` inside the directory `dir` (a handle), replacing what was there; the file
// is opened beneath `dir` (beneath.hpp), never through a symlink.
void write_small_at(int dir, const char* name, const std::string& text) {
  unique_fd fd = open_beneath(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::system_error(errno, std::generic_category(), std::string("write ") + name);
}

std::vector<pid_t> host_children(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(t.path() / "children");
    pid_t c;
    while (in >> c)
      out.push_back(c);
  }
  return out;
}

// Stops the tree under `root` (stopped processes cannot fork) until no new member
// appears, then kills every member.
void kill_host_tree(pid_t root) {
  std::set<pid_t> tree;
  for (int round = 0; round < 20; ++round) {
    std::vector<pid_t> todo{root};
    size_t before = tree.size();
    while (!todo.empty()) {
      pid_t p = todo.back();
      todo.pop_back();
      if (tree.insert(p).second || round > 0)
        ::kill(p, SIGSTOP);
      for (pid_t c : host_children(p))
        if (!tree.count(c))
          todo.push_back(c);
    }
    if (tree.size() == before && round > 0)
      break;
  }
  for (pid_t p : tree)
    ::kill(p, SIGKILL);
}

std::string instance_of(const std::string& data_dir) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08zx", std::hash<std::string>{}(data_dir)&0xffffffffu);
  return buf;
}

} // namespace

std::optional<std::string> oci_unavailable(oci_runtime runtime) {
  const char* name = runtime_name(runtime);
  if (::geteuid() != 0)
    return std::string(name) + " sandboxes need root (overlay mounts, cgroups)";
  bool found =
    runtime == oci_runtime::crun ? !find_program(name).empty() : !find_runsc().path.empty();
  if (!found)
    return std::string(name) + " is not installed (not found in PATH); " +
           (runtime == oci_runtime::crun ? "apt-get install crun"
                                         : "run scripts/setup (or apt-get install runsc)");
  if (::access("/bin/busybox", X_OK) != 0)
    return std::string("the base template needs /bin/busybox; apt-get install busybox-static");
  if (!fs::exists("/sys/fs/cgroup/memory") && !fs::exists("/sys/fs/cgroup/cgroup.controllers"))
    return std::string("no cgroup filesystem at /sys/fs/cgroup");
  if (auto why = layer_pool::unavailable())
    return why;
  return std::nullopt;
}

// The options with the data directory replaced by the path the driver works through.
static oci_options through(oci_options o, const data_entry& entry) {
  o.data_dir = entry.path();
  return o;
}

// The directories of the data directory and who may reach them (docs/security.md): the
// top and sandboxes/ only traversable (0711), the rest the daemon's alone.
static void set_data_dir_modes(const std::string& data) {
  for (const auto& [path, mode] : {std::pair<std::string, mode_t>{data, 0711},
                                   {data + "/sandboxes", 0711},
                                   {data + "/templates", 0700},
                                   {data + "/state", 0700}})
    if (::chmod(path.c_str(), mode) != 0)
      throw std::system_error(errno, std::generic_category(), "chmod " + path);
}

oci_driver::oci_driver(oci_options options)
    : entry_(options.data_dir, options.entry_root), options_(through(std::move(options), entry_)),
      templates_(options_.data_dir), removals_(options_.data_dir),
      layers_({options_.data_dir, options_.layer_pool_bytes, options_.default_disk_bytes}),
      ids_(options_.id_ranges_first, options_.id_ranges_count) {
  if (options_.data_dir.find_first_of(",:") != std::string::npos)
    throw std::invalid_argument("data directory " + options_.data_dir +
                                " must not contain ',' or ':' (overlay mount options)");
  if (options_.runtime == oci_runtime::runsc) {
    runsc_binary b = find_runsc(options_.runtime_path);
    runtime_bin_ = b.path;
    runsc_current_ = b.current;
    runsc_oci_seccomp_ = b.oci_seccomp;
    runtime_note_ = b.note;
  } else {
    runtime_bin_ = options_.runtime_path.empty() ? find_program("crun") : options_.runtime_path;
    runtime_note_ = "crun " + runtime_bin_;
  }
  state_root_ = options_.data_dir + "/state/" + runtime_name(options_.runtime);
  fs::create_directories(state_root_);
  fs::create_directories(options_.data_dir + "/sandboxes");
  sandboxes_fd_ =
    unique_fd(::open((options_.data_dir + "/sandboxes").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!sandboxes_fd_)
    throw std::system_error(errno, std::generic_category(), "open " + options_.data_dir);
  instance_ = instance_of(options_.data_dir);
  set_data_dir_modes(options_.data_dir);
  // The exec guard, reachable (not listable) for the runtimes' user-namespaced processes.
  std::string helpers = options_.data_dir + "/helpers";
  if (::mkdir(helpers.c_str(), 0711) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "mkdir " + helpers);
  ::chmod(helpers.c_str(), 0711);
  install_exec_guard(exec_guard_path());
  if (::mkdir((state_root_ + "/scratch").c_str(), 0700) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "mkdir " + state_root_ + "/scratch");
  for (const auto& id : sandbox_ids(options_.data_dir))
    if (auto r = load_record(options_.data_dir, id); r && r->id_base != 0)
      ids_.mark_taken({r->id_base});
}

oci_driver::~oci_driver() {
  try {
    if (sandbox_ids(options_.data_dir).empty())
      unmount_path(state_root_ + "/null-netns");
  } catch (...) {
    // Left for the next driver on this data directory.
  }
}

std::string_view oci_driver::name() const {
  return runtime_name(options_.runtime);
}

bool oci_driver::has_dir(const std::string& id) const {
  require_plain_component(id, "sandbox id");
  struct stat st {};
  if (::fstatat(sandboxes_fd_.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
    return true;
  if (errno != ENOENT)
    throw std::system_error(errno, std::generic_category(), "stat " + dir(id));
  return false;
}

unique_fd oci_driver::sandbox_fd(const std::string& id) const {
  require_plain_component(id, "sandbox id");
  unique_fd fd = open_beneath(sandboxes_fd_.get(), id, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  if (!fd)
    throw std::system_error(errno, std::generic_category(), "open " + dir(id));
  return fd;
}

std::vector<std::string> oci_driver::runtime_command() const {
  if (options_.runtime == oci_runtime::crun)
    return {runtime_bin_, "--root=" + state_root_};
  // --overlay2=none: the sandbox's writes go to its layer on the host (paused reads and
  // storage billing read it), which is nosuid,nodev there.
  if (runsc_current_)
    return {runtime_bin_,         "--root=" + state_root_,   "--network=none",
            "--platform=systrap", "--file-access=exclusive", "--overlay2=none",
            "--oci-seccomp"};
  std::vector<std::string> older = {runtime_bin_,      "--root=" + state_root_,
                                    "--network=none",  "--platform=ptrace",
                                    "--overlay2=none", "--file-access=shared"};
  if (runsc_oci_seccomp_)
    older.push_back("--oci-seccomp");
  return older;
}

std::string oci_driver::cid(const std::string& id) const {
  return instance_ + "-" + id + ".c";
}

std::string oci_driver::cgroup_path(const std::string& id) const {
  return "/sandboxd/" + instance_ + "-" + id;
}

oci_driver::cli_output oci_driver::cli(std::vector<std::string> args) const {
  process_options o;
  o.argv = runtime_command();
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.hide_cgroup2 = hides_cgroup2();
  o.max_output_bytes = 1 << 20;
  o.timeout = std::chrono::minutes(2);
  auto r = run_process(o);
  if (r.exit_code == 0)
    return {true, r.out};
  return {false, r.err + r.out};
}

outcome<void> oci_driver::cli_step(const std::string& id, const char* step,
                                   std::vector<std::string> args) {
  auto r = cli(std::move(args));
  if (r.ok)
    return {};
  return make_error(errc::internal,
                    std::string(name()) + " " + step + " of sandbox " + id + " failed: " + r.text);
}

overlay_dirs oci_driver::overlay_of(const sandbox_record& r) const {
  std::string d = dir(r.info.id);
  if (r.id_base == 0) // a sandbox made before layers had their own pool and range
    return {r.template_dir, d + "/upper", d + "/work", d + "/merged"};
  return {d + "/lower", layers_.upper(r.info.id), layers_.work(r.info.id), d + "/merged"};
}

void oci_driver::mount_rootfs(const sandbox_record& r) {
  auto ov = overlay_of(r);
  if (is_mount_point(ov.target))
    return;
  if (r.id_base != 0 && !is_mount_point(ov.lower)) {
    auto t = templates_.open_rootfs(r.template_dir);
    if (!t)
      throw std::runtime_error(t.err().message);
    mount_idmapped(t->get(), ov.lower, {r.id_base});
  }
  mount_overlay(ov);
}

void oci_driver::unmount_rootfs(const sandbox_record& r, bool flush) {
  auto ov = overlay_of(r);
  unmount_overlay(ov, flush);
  if (r.id_base != 0)
    unmount_path(ov.lower);
}

std::optional<std::string> oci_driver::runtime_status(const std::string& id) const {
  auto r = cli({"state", cid(id)});
  if (!r.ok)
    return std::nullopt;
  auto j = nlohmann::json::parse(r.text, nullptr, false);
  if (j.is_discarded())
    return std::nullopt;
  return j.value("status", "");
}

outcome<void> oci_driver::create_container(const sandbox_record& r, bool sync_new_record) {
  const std::string& id = r.info.id;
  mount_rootfs(r);
  // The sandbox's directory is its OCI bundle: config.json beside the root filesystem.
  write_small_at(sandbox_fd(id).get(), "config.json",
                 make_config_json({overlay_of(r).target, cgroup_path(id), r.info.limits, r.id_base,
                                   r.id_base != 0 ? exec_guard_path() : ""}));
  memfd_file pid_file;
  std::vector<std::string> args = {"create", "--bundle", dir(id)};
  if (options_.runtime == oci_runtime::crun)
    args.push_back("--pid-file=" + pid_file.path()); // its init is re-parented to us
  args.push_back(cid(id));
  // The new record's fsync (mostly waiting for the disk) runs while
  // the runtime creates the container (mostly CPU), not before it: started any earlier,
  // the commit would hold up the mount and the other writes above.
  std::optional<record_sync> sync;
  if (sync_new_record)
    sync.emplace(options_.data_dir, id);
  auto c = cli_step(id, "create", args);
  if (std::string pid = pid_file.read(); !pid.empty()) {
    orphan_reaper::adopt(std::stoi(pid));
    std::lock_guard<std::mutex> g(init_pids_mu_);
    init_pids_[id] = std::stoi(pid);
  }
  if (sync)
    sync->wait(); // throws if the record is not durable
  return c;
}

void oci_driver::delete_container(const std::string& id, bool frozen) {
  if (frozen && freezes())
    cli({"resume", cid(id)}); // frozen processes cannot die
  cli({"delete", "--force", cid(id)});
  orphan_reaper::poke();
}

void oci_driver::refresh_status(sandbox_record& r) {
  if (r.info.status != sandbox_status::running && r.info.status != sandbox_status::created)
    return;
  auto st = runtime_status(r.info.id);
  if (!st || *st == "stopped") {
    r.info.status = sandbox_status::stopped;
    save_record(options_.data_dir, r, record_write::update);
  }
}

outcome<sandbox_info> oci_driver::create(const create_request& req) {
  if (auto c = check_sandbox_id(req.id); !c)
    return c.err();
  if (auto c = check_template_name(req.template_name); !c)
    return c.err();
  if (req.network != network_policy::none)
    return make_error(errc::invalid_argument, std::string("driver ") + std::string(name()) +
                                                " supports only network policy none (loopback); "
                                                "drop the network request");
  auto g = locks_.lock(req.id);
  return guard_faults("create sandbox " + req.id, [&]() -> outcome<sandbox_info> {
    std::string d = dir(req.id);
    if (has_dir(req.id))
      return make_error(errc::conflict, "sandbox " + req.id + " already exists; pick another id");
    auto root = templates_.rootfs(req.template_name);
    if (!root)
      return root.err();
    sandbox_record r;
    r.info.id = req.id;
    r.info.template_name = req.template_name;
    r.info.limits = req.limits;
    r.info.status = sandbox_status::created;
    r.template_dir = root.value();
    auto range = ids_.take();
    if (!range)
      return make_error(errc::resource_exhausted,
                        "every host id range of this node is in use; remove a sandbox first");
    r.id_base = range->base;
    auto undo = [&] {
      delete_container(req.id, false);
      unmount_rootfs(r, false);
      layers_.remove(req.id);
      remove_tree_at(sandboxes_fd_.get(), req.id);
      ids_.release(*range);
    };
    outcome<void> c;
    try {
      // A spare skeleton of a removed sandbox (its directory, empty lower/ and merged/)
      // saves making them.
      if (!removals_.reuse(d) && ::mkdirat(sandboxes_fd_.get(), req.id.c_str(), 0710) != 0)
        throw std::system_error(errno, std::generic_category(), "mkdir " + d);
      unique_fd sb = sandbox_fd(req.id);
      // Only the sandbox's root (its group) may pass through, to reach merged/.
      if (::fchownat(sb.get(), "", 0, range->base, AT_EMPTY_PATH) != 0 ||
          ::fchmodat(sandboxes_fd_.get(), req.id.c_str(), 0710, AT_SYMLINK_NOFOLLOW) != 0)
        throw std::system_error(errno, std::generic_category(), "chown " + d);
      for (const char* sub : {"lower", "merged"})
        if (::mkdirat(sb.get(), sub, 0700) != 0 && errno != EEXIST)
          throw std::system_error(errno, std::generic_category(), "mkdir " + d + "/" + sub);
      // A layer without a sandbox directory is what a crash between the two left.
      if (layers_.exists(req.id))
        layers_.remove(req.id);
      layers_.create(req.id, range->base, range->base, req.limits.disk_bytes);
      save_record(options_.data_dir, r, record_write::first);
      c = create_container(r, true);
    } catch (...) {
      undo();
      throw;
    }
    if (!c) {
      undo();
      return c.err();
    }
    return r.info;
  });
}

outcome<void> oci_driver::start(const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("start sandbox " + id, [&]() -> outcome<void> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    if (r->info.status == sandbox_status::running)
      refresh_status(r.value()); // it may have ended on its own
    if (auto c = check_allowed(r->info, operation::start); !c)
      return c;
    if (r->info.status == sandbox_status::stopped) {
      delete_container(id, false);
      if (auto c = create_container(r.value()); !c)
        return c;
    }
    if (auto c = start_container(id); !c)
      return c;
    r->info.status = sandbox_status::running;
    save_record(options_.data_dir, r.value(), record_write::update);
    return {};
  });
}

outcome<void> oci_driver::start_container(const std::string& id) {
  auto c = cli_step(id, "start", {"start", cid(id)});
  if (!c || options_.runtime != oci_runtime::crun)
    return c;
  // `crun start` returns once it has told the container's init to go on, which may still
  // be in crun's own code: not dumpable, its memory owned by the host's user namespace, so
  // an exec joining its namespaces then fails (setns: EPERM). Wait until it has become the
  // sandbox's init (its command name changes at its execve).
  pid_t pid = 0;
  {
    std::lock_guard<std::mutex> g(init_pids_mu_);
    if (auto it = init_pids_.find(id); it != init_pids_.end())
      pid = it->second;
  }
  const std::string comm = "/proc/" + std::to_string(pid) + "/comm";
  for (int i = 0; pid > 0 && i < 2000; ++i) {
    std::string name = read_small(comm);
    if (name.empty() || name.rfind("crun", 0) != 0)
      break;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return c;
}

std::uint64_t oci_driver::oom_kills(const std::string& id) const {
  std::ifstream in("/sys/fs/cgroup/memory" + cgroup_path(id) + "/memory.oom_control");
  std::string key;
  std::uint64_t v = 0;
  while (in >> key >> v)
    if (key == "oom_kill")
      return v;
  return 0;
}

void oci_driver::kill_exec_tree(const std::string& id, const std::string& pid_text) const {
  if (pid_text.empty())
    return;
  pid_t pid = std::stoi(pid_text);
  if (options_.runtime == oci_runtime::crun) {
    kill_host_tree(pid);
    return;
  }
  // runsc: the processes live in gVisor's kernel; find the tree with `runsc ps`
  // (columns UID PID PPID ...), stop it until it stops growing, then kill it.
  std::set<pid_t> tree{pid};
  for (int round = 0; round < 10; ++round) {
    size_t before = tree.size();
    auto ps = cli({"ps", cid(id)});
    std::istringstream lines(ps.text);
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
    std::vector<pid_t> todo(tree.begin(), tree.end());
    while (!todo.empty()) {
      pid_t p = todo.back();
      todo.pop_back();
      auto [b, e] = kids.equal_range(p);
      for (auto it = b; it != e; ++it)
        if (tree.insert(it->second).second)
          todo.push_back(it->second);
    }
    for (pid_t p : tree)
      cli({"kill", "--pid=" + std::to_string(p), cid(id), "STOP"});
    if (round > 0 && tree.size() == before)
      break;
  }
  for (pid_t p : tree)
    cli({"kill", "--pid=" + std::to_string(p), cid(id), "KILL"});
}

outcome<exec_result> oci_driver::exec(const std::string& id, const exec_request& req) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  return guard_faults("exec in sandbox " + id, [&]() -> outcome<exec_result> {
    sandbox_record rec;
    {
      auto g = locks_.lock(id);
      auto r = find_record(options_.data_dir, id);
      if (!r)
        return r.err();
      if (auto c = check_allowed(r->info, operation::exec); !c)
        return c.err();
      rec = r.value();
    }
    // Sandboxes of the current layout run every exec under the guard (exec_guard.hpp).
    const bool guarded = rec.id_base != 0;
    auto doc = make_process_json(req, rec.info.limits.pids, guarded);
    if (!doc)
      return doc.err();
    memfd_file process_json(doc.value());
    // crun writes the pid file in place (a memfd path works); runsc writes a temporary
    // file beside it and renames it, so it gets a name in a private directory.
    memfd_file crun_pid;
    scratch_file runsc_pid(state_root_ + "/scratch");
    struct {
      bool crun;
      memfd_file& m;
      scratch_file& f;
      std::string read() const { return crun ? m.read() : f.read(); }
    } pid_file{options_.runtime == oci_runtime::crun, crun_pid, runsc_pid};
    process_options o;
    o.argv = runtime_command();
    o.argv.push_back("exec");
    o.argv.push_back("--process=" + process_json.path());
    o.argv.push_back(pid_file.crun ? "--pid-file=" + crun_pid.path()
                                   : "--internal-pid-file=" + runsc_pid.path());
    o.argv.push_back(cid(id));
    o.hide_cgroup2 = hides_cgroup2();
    o.stdin_data = req.stdin_data;
    o.max_output_bytes = rec.info.limits.max_output_bytes;
    // With crun, stderr is held back while it could still be crun's own start-up failure
    // (below), so that the caller never sees that text from an attempt that is retried.
    startup_filter filter(req.on_output, options_.runtime == oci_runtime::crun);
    if (req.on_output)
      o.on_output = [&](output_stream s, std::string_view d) { filter.take(s, d); };
    // The guard ends the exec at its timeout; the driver's own deadline, a little later,
    // is the backstop should the guard itself be gone (code in the sandbox may kill it).
    if (req.timeout.count() > 0) // 0: none
      o.timeout = guarded ? req.timeout + k_guard_grace : req.timeout;
    o.on_timeout = [&] { kill_exec_tree(id, pid_file.read()); };
    std::uint64_t ooms = oom_kills(id);
    const auto started = std::chrono::steady_clock::now();
    const bool rec_is_runsc = options_.runtime == oci_runtime::runsc;
    auto p = run_process(o);
    // crun fails to join a container whose init is still in crun's own code ("setns(...):
    // Operation not permitted", "fail startup"; about once in 25 execs right after a start
    // on a loaded machine, before start_container waited for the init). The program never
    // ran: should it still happen, run it again.
    for (int retry = 0; retry < 3 && !rec_is_runsc && crun_failed_startup(p); ++retry) {
      filter.discard();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      p = run_process(o);
    }
    filter.flush();
    const bool guard_timed_out = guarded && req.timeout.count() > 0 &&
                                 p.exit_code == 128 + SIGKILL &&
                                 std::chrono::steady_clock::now() - started >= req.timeout;

    exec_result res;
    res.stdout_data = std::move(p.out);
    res.stderr_data = std::move(p.err);
    res.output_truncated = p.truncated;
    res.timed_out = p.timed_out || guard_timed_out;
    res.oom_killed = oom_kills(id) > ooms;
    // The runtimes report a process killed by signal n as exit status 128 + n.
    if (p.exit_code > 128 && p.exit_code <= 128 + 64) {
      res.signal = p.exit_code - 128;
    } else if (p.signal != 0) {
      res.signal = p.signal;
    } else {
      res.exit_code = p.exit_code;
    }
    if (res.timed_out && res.signal == 0) {
      res.signal = SIGKILL;
      res.exit_code = -1;
    }
    // A failure of the runtime itself or a kill may mean the whole sandbox ended.
    bool suspicious = res.oom_killed || res.signal != 0 || p.exit_code >= 125;
    auto g = locks_.lock(id);
    if (auto r = suspicious ? load_record(options_.data_dir, id) : std::nullopt) {
      refresh_status(*r);
      if (r->info.status == sandbox_status::stopped) {
        // The whole sandbox ended while the exec ran (runsc over its limits).
        res.exit_code = -1;
        if (res.signal == 0)
          res.signal = SIGKILL;
        res.stderr_data += "\nsandbox " + id + " stopped while the exec ran" +
                           (res.oom_killed ? " (memory limit)" : "") + "; start it again";
      }
    }
    return res;
  });
}

outcome<void> oci_driver::pause(const std::string& id, pause_mode mode) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("pause sandbox " + id, [&]() -> outcome<void> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    refresh_status(r.value());
    if (auto c = check_allowed(r->info, operation::pause); !c)
      return c;
    if (mode == pause_mode::filesystem) {
      delete_container(id, false);
      unmount_rootfs(r.value());
      r->info.status = sandbox_status::paused_filesystem;
    } else if (freezes()) {
      if (auto c = cli_step(id, "pause", {"pause", cid(id)}); !c)
        return c;
      r->info.status = sandbox_status::paused_memory;
    } else {
      std::string image = dir(id) + "/checkpoint";
      unique_fd sb = sandbox_fd(id);
      remove_tree_at(sb.get(), "checkpoint");
      if (::mkdirat(sb.get(), "checkpoint", 0700) != 0)
        throw std::system_error(errno, std::generic_category(), "mkdir " + image);
      if (auto c = cli_step(id, "checkpoint", {"checkpoint", "--image-path=" + image, cid(id)}); !c)
        return c;
      delete_container(id, false);
      r->info.status = sandbox_status::paused_memory;
    }
    save_record(options_.data_dir, r.value(), record_write::update);
    return {};
  });
}

outcome<void> oci_driver::resume(const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("resume sandbox " + id, [&]() -> outcome<void> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    if (auto c = check_allowed(r->info, operation::resume); !c)
      return c;
    if (r->info.status == sandbox_status::paused_filesystem) {
      auto made = create_container(r.value());
      if (!made) { // a resume a crash interrupted left its container: made afresh, once
        delete_container(id, false);
        made = create_container(r.value());
      }
      if (!made)
        return made;
      if (auto c = start_container(id); !c)
        return c;
    } else if (freezes()) {
      if (auto c = cli_step(id, "resume", {"resume", cid(id)}); !c)
        return c;
    } else {
      std::string image = dir(id) + "/checkpoint";
      mount_rootfs(r.value());
      if (auto c = cli_step(
            id, "restore",
            {"restore", "--detach", "--image-path=" + image, "--bundle=" + dir(id), cid(id)});
          !c)
        return c;
      remove_tree_at(sandbox_fd(id).get(), "checkpoint");
    }
    r->info.status = sandbox_status::running;
    save_record(options_.data_dir, r.value(), record_write::update);
    return {};
  });
}

outcome<void> oci_driver::remove(const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c;
  auto g = locks_.lock(id);
  return guard_faults("remove sandbox " + id, [&]() -> outcome<void> {
    std::string d = dir(id);
    if (!has_dir(id))
      return make_error(errc::not_found, "sandbox " + id + " not found; nothing to remove");
    auto r = load_record(options_.data_dir, id);
    delete_container(id, !r || r->info.status == sandbox_status::paused_memory);
    if (r) {
      unmount_rootfs(*r, false);
    } else { // no record: whatever is mounted there goes
      unmount_path(d + "/merged");
      unmount_path(d + "/lower");
    }
    if (layers_.exists(id))
      layers_.remove(id);
    {
      std::lock_guard<std::mutex> pg(init_pids_mu_);
      init_pids_.erase(id);
    }
    if (r && r->id_base != 0)
      ids_.release({r->id_base});
    for (const char* ctrl :
         {"memory", "pids", "cpu", "cpuacct", "cpuset", "blkio", "devices", "freezer", "systemd"}) {
      std::string cg = std::string("/sys/fs/cgroup/") + ctrl + cgroup_path(id);
      ::rmdir(cg.c_str());
    }
    try {
      // Gone from sandboxes/ now; its files are deleted (or it is stripped to a spare
      // skeleton) in the background.
      removals_.take(d, true);
    } catch (const std::system_error&) {
      remove_tree_at(sandboxes_fd_.get(), id);
    }
    return {};
  });
}

template <class F>
auto oci_driver::with_files(const std::string& id, bool write, F&& f)
  -> decltype(f(std::string(), sandbox_record())) {
  using result = decltype(f(std::string(), sandbox_record()));
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("files of sandbox " + id, [&]() -> result {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    if (write)
      if (auto c = check_allowed(r->info, operation::write); !c)
        return c.err();
    // Offline (filesystem-paused): mount the root filesystem for this call only, so that
    // whiteouts and the template below are honoured exactly as inside the sandbox.
    bool mounted_here = !is_mount_point(overlay_of(r.value()).target);
    if (mounted_here)
      mount_rootfs(r.value());
    struct unmount_after {
      oci_driver* d;
      const sandbox_record* r;
      bool on;
      ~unmount_after() {
        if (on) {
          try {
            d->unmount_rootfs(*r);
          } catch (...) {
            // Left mounted; remove() and the next pause unmount it.
          }
        }
      }
    } after{this, &r.value(), mounted_here};
    return f(dir(id) + "/merged", r.value());
  });
}

outcome<std::string> oci_driver::read_file(const std::string& id, const std::string& path) {
  return with_files(id, false, [&](const std::string& root, const sandbox_record& r) {
    return read_file_in_root(root, path, r.info.limits.max_file_bytes);
  });
}

outcome<void> oci_driver::write_file(const std::string& id, const std::string& path,
                                     std::string_view content, std::uint32_t mode) {
  return with_files(
    id, true, [&](const std::string& root, const sandbox_record& r) -> outcome<void> {
      // gVisor with exclusive file access never looks at the layer behind its back: while
      // it runs, files are written through it, by the guard as the sandbox's root.
      if (runsc_current_ && r.id_base != 0 && r.info.status == sandbox_status::running)
        return write_through_sandbox(r, path, content, mode);
      // Files the daemon writes belong to the sandbox's root, as if it had written them.
      std::optional<file_owner> owner;
      if (r.id_base != 0)
        owner = file_owner{r.id_base, r.id_base};
      return write_file_in_root(root, path, content, mode, r.info.limits.max_file_bytes, owner);
    });
}

outcome<void> oci_driver::write_through_sandbox(const sandbox_record& r, const std::string& path,
                                                std::string_view content, std::uint32_t mode) {
  auto target = checked_write_path(path, content.size(), r.info.limits.max_file_bytes);
  if (!target)
    return target.err();
  char octal[16];
  std::snprintf(octal, sizeof octal, "%o", mode & 0777);
  exec_request e;
  e.argv = {k_exec_guard_in_sandbox, "--write", target.value(), octal};
  e.stdin_data = std::string(content);
  auto doc = make_process_json(e, r.info.limits.pids, false);
  if (!doc)
    return doc.err();
  memfd_file process_json(doc.value());
  process_options o;
  o.argv = runtime_command();
  o.argv.insert(o.argv.end(), {"exec", "--process=" + process_json.path(), cid(r.info.id)});
  o.stdin_data = e.stdin_data;
  o.timeout = std::chrono::minutes(2);
  auto p = run_process(o);
  if (p.exit_code == 0)
    return {};
  if (int e = 0; std::sscanf(p.err.c_str(), "errno %d", &e) == 1)
    return error_of_errno(e, path);
  return make_error(errc::internal,
                    "writing " + path + " in sandbox " + r.info.id + " failed: " + p.err + p.out);
}

outcome<dir_listing> oci_driver::list_dir(const std::string& id, const std::string& path) {
  return with_files(id, false, [&](const std::string& root, const sandbox_record& r) {
    return list_dir_in_root(root, path, r.info.limits.max_dir_entries);
  });
}

outcome<file_info> oci_driver::stat(const std::string& id, const std::string& path) {
  return with_files(id, false, [&](const std::string& root, const sandbox_record&) {
    return stat_in_root(root, path);
  });
}

// Placeholders until the oci driver's own implementation of these calls: each says that
// this build of the driver cannot do it yet.
namespace {
error not_yet(std::string_view call, const std::string& id) {
  return make_error(errc::unavailable, std::string(call) + " on sandbox " + id +
                                         " is not implemented by this build of the oci "
                                         "driver; use exec for it");
}
} // namespace

outcome<void> oci_driver::signal_exec(const std::string& id, const std::string&, int) {
  return not_yet("signal_exec", id);
}
outcome<void> oci_driver::make_dir(const std::string& id, const std::string&, bool, std::uint32_t) {
  return not_yet("make_dir", id);
}
outcome<void> oci_driver::remove_path(const std::string& id, const std::string&, bool) {
  return not_yet("remove_path", id);
}
outcome<void> oci_driver::rename_path(const std::string& id, const std::string&,
                                      const std::string&) {
  return not_yet("rename_path", id);
}

outcome<usage_info> oci_driver::usage(const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  return guard_faults("usage of sandbox " + id, [&]() -> outcome<usage_info> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    usage_info u;
    // The kernel's count for the layer (layer_pool.hpp); a sandbox made before layers had
    // their own pool is walked by handle.
    u.writable_bytes =
      r->id_base != 0 ? layers_.usage(id) : tree_bytes_at(sandbox_fd(id).get(), "upper");
    std::string mem =
      read_small("/sys/fs/cgroup/memory" + cgroup_path(id) + "/memory.usage_in_bytes");
    if (!mem.empty())
      u.memory_bytes = std::stoull(mem);
    std::string cpu = read_small("/sys/fs/cgroup/cpuacct" + cgroup_path(id) + "/cpuacct.usage");
    if (!cpu.empty())
      u.cpu_ns = std::stoull(cpu);
    return u;
  });
}

outcome<sandbox_info> oci_driver::inspect(const std::string& id) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  auto g = locks_.lock(id);
  return guard_faults("inspect sandbox " + id, [&]() -> outcome<sandbox_info> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    refresh_status(r.value());
    return r->info;
  });
}

outcome<std::vector<sandbox_info>> oci_driver::list() {
  std::vector<sandbox_info> out;
  for (const auto& id : sandbox_ids(options_.data_dir))
    if (auto r = inspect(id))
      out.push_back(r.value());
  return out;
}

} // namespace sandboxd::runtime
