// The OCI driver's setup (data directory, runtime, exec guard), its sandboxes' root
// filesystems, and the calls that only read them: usage, inspect, list (oci_driver.hpp).
#include "runtime/oci_driver.hpp"

#include "runtime/beneath.hpp"
#include "runtime/child_process.hpp"
#include "runtime/exec_guard.hpp"
#include "runtime/runsc_binary.hpp"
#include "runtime/small_text.hpp"
#include "runtime/tree_walk.hpp"

#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace sandboxd::runtime {
namespace {

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
  if (runtime == oci_runtime::runsc) {
    // An older runsc (Debian 12's) cannot hold the boundary docs/security.md promises: no
    // child subreapers (an exec's timeout misses double-forked processes) and user
    // namespaces inside the sandbox. It is refused rather than run weaker.
    const auto b = find_runsc();
    if (!b.current)
      return "runsc " + b.path +
             " is an older one (ptrace platform, no child subreapers, user namespaces "
             "inside): run scripts/setup to build the pinned gVisor (needs Go), point "
             "SANDBOXD_RUNSC at a current runsc, or use crun";
  }
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
      cli_(options_.runtime, options_.runtime_path,
           options_.data_dir + "/state/" + runtime_name(options_.runtime)),
      templates_(options_.data_dir), removals_(options_.data_dir),
      layers_({options_.data_dir, options_.layer_pool_bytes, options_.default_disk_bytes}),
      ids_(options_.id_ranges_first, options_.id_ranges_count), agents_([this] {
        agent_hub_options o;
        o.limits.answer = options_.agent_answer;
        o.connect_wait = options_.agent_connect;
        o.on_failure = [this](const std::string& id, const std::string& reason) {
          std::lock_guard g(failures_mu_);
          if (failures_stop_)
            return;
          failures_.emplace_back(id, reason);
          failures_cv_.notify_one();
        };
        return o;
      }()) {
  if (options_.data_dir.find_first_of(",:") != std::string::npos)
    throw std::invalid_argument("data directory " + options_.data_dir +
                                " must not contain ',' or ':' (overlay mount options)");
  fs::create_directories(cli_.state_root());
  fs::create_directories(options_.data_dir + "/sandboxes");
  sandboxes_fd_ =
    unique_fd(::open((options_.data_dir + "/sandboxes").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!sandboxes_fd_)
    throw std::system_error(errno, std::generic_category(), "open " + options_.data_dir);
  instance_ = instance_of(options_.data_dir);
  if (!options_.link_range.empty()) {
    links_ = parse_link_range(options_.link_range);
    if (!links_)
      throw std::invalid_argument("link range " + options_.link_range +
                                  " is not an IPv4 block of at least one /30 (say 10.200.0.0/17)");
    fs::create_directories(options_.data_dir + "/netns");
  }
  set_data_dir_modes(options_.data_dir);
  // The exec guard, reachable (not listable) for the runtimes' user-namespaced processes.
  std::string helpers = options_.data_dir + "/helpers";
  if (::mkdir(helpers.c_str(), 0711) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "mkdir " + helpers);
  ::chmod(helpers.c_str(), 0711);
  install_exec_guard(exec_guard_path());
  if (::mkdir((cli_.state_root() + "/scratch").c_str(), 0700) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(),
                            "mkdir " + cli_.state_root() + "/scratch");
  for (const auto& id : sandbox_ids(options_.data_dir)) {
    auto r = load_record(options_.data_dir, id);
    if (!r || r->id_base == 0)
      continue;
    ids_.mark_taken({r->id_base});
    // The agents of sandboxes that run on (or stay frozen) past a restart of this process
    // connect again to a socket listened on from now, not only at their next exec.
    if (r->agent && (r->info.status == sandbox_status::running ||
                     (r->info.status == sandbox_status::paused_memory && freezes()))) {
      try {
        listen_for_agent(*r, false);
      } catch (const std::exception&) {
        // Listened for again at the sandbox's next exec, which reports the fault.
      }
    }
  }
  failure_thread_ = std::thread([this] { failure_loop(); });
}

oci_driver::~oci_driver() {
  {
    std::lock_guard g(failures_mu_);
    failures_stop_ = true;
  }
  failures_cv_.notify_all();
  failure_thread_.join();
  try {
    // runsc mounts it at its first create; two first creates at once (a warm pool's refill)
    // can each mount it, one over the other: every layer goes.
    const std::string null_netns = cli_.state_root() + "/null-netns";
    for (int i = 0; i < 16 && sandbox_ids(options_.data_dir).empty() && is_mount_point(null_netns);
         ++i)
      unmount_path(null_netns);
  } catch (...) {
    // Left for the next driver on this data directory.
  }
}

std::string_view oci_driver::name() const {
  return cli_.name();
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

std::string oci_driver::cid(const std::string& id) const {
  return instance_ + "-" + id + ".c";
}

std::string oci_driver::cgroup_path(const std::string& id) const {
  return "/sandboxd/" + instance_ + "-" + id;
}

overlay_dirs oci_driver::overlay_of(const sandbox_record& r) const {
  std::string d = dir(r.info.id);
  if (r.id_base == 0) // a sandbox made before layers had their own pool and range
    return {r.template_dir, d + "/upper", d + "/work", d + "/merged"};
  std::string lower = d + "/lower";
  if (!r.layers.empty()) { // overlayfs takes the topmost lower directory first
    lower.clear();
    for (std::size_t i = r.layers.size(); i-- > 0;)
      lower += (lower.empty() ? "" : ":") + d + "/lower/" + std::to_string(i);
  }
  return {lower, layers_.upper(r.info.id), layers_.work(r.info.id), d + "/merged"};
}

void oci_driver::mount_layers(const sandbox_record& r) {
  if (!options_.template_layers)
    throw std::runtime_error("sandbox " + r.info.id +
                             " is made of template layers, but this driver has no layer store");
  unique_fd lower =
    open_beneath(sandbox_fd(r.info.id).get(), "lower", O_PATH | O_DIRECTORY | O_NOFOLLOW);
  if (!lower)
    throw std::system_error(errno, std::generic_category(), "open " + dir(r.info.id) + "/lower");
  std::vector<unique_fd> held;
  std::vector<std::pair<int, std::string>> mounts;
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const std::string name = std::to_string(i);
    const std::string target = dir(r.info.id) + "/lower/" + name;
    if (::mkdirat(lower.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::system_error(errno, std::generic_category(), "mkdir " + target);
    if (is_mount_point(target))
      continue;
    unique_fd layer = options_.template_layers->open(r.layers[i]);
    if (!layer)
      throw std::runtime_error("template layer " + r.layers[i] + " of sandbox " + r.info.id +
                               " is not in the layer store " + options_.template_layers->path() +
                               "; recreate the sandbox");
    mounts.emplace_back(layer.get(), target);
    held.push_back(std::move(layer));
  }
  mount_idmapped(mounts, {r.id_base});
}

void oci_driver::unmount_layers(const sandbox_record& r) {
  unique_fd lower =
    open_beneath(sandbox_fd(r.info.id).get(), "lower", O_PATH | O_DIRECTORY | O_NOFOLLOW);
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const std::string name = std::to_string(i);
    unmount_path(dir(r.info.id) + "/lower/" + name);
    if (lower)
      ::unlinkat(lower.get(), name.c_str(), AT_REMOVEDIR);
  }
}

void oci_driver::mount_rootfs(const sandbox_record& r) {
  auto ov = overlay_of(r);
  if (is_mount_point(ov.target))
    return;
  if (r.id_base != 0 && !r.layers.empty()) {
    mount_layers(r);
  } else if (r.id_base != 0 && !is_mount_point(ov.lower)) {
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
  if (r.id_base != 0 && !r.layers.empty())
    unmount_layers(r);
  else if (r.id_base != 0)
    unmount_path(ov.lower);
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
      read_small_text("/sys/fs/cgroup/memory" + cgroup_path(id) + "/memory.usage_in_bytes");
    if (!mem.empty())
      u.memory_bytes = std::stoull(mem);
    std::string cpu =
      read_small_text("/sys/fs/cgroup/cpuacct" + cgroup_path(id) + "/cpuacct.usage");
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
