// The OCI driver's lifecycle: create, start, pause, resume and remove, and the container
// steps they are made of (oci_driver.hpp).
#include "runtime/oci_driver.hpp"

#include "runtime/beneath.hpp"
#include "runtime/lifecycle_rules.hpp"
#include "runtime/memfd_file.hpp"
#include "runtime/names.hpp"
#include "runtime/oci_spec.hpp"
#include "runtime/tree_walk.hpp"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

// Writes `name` inside the directory `dir` (a handle), replacing what was there; the file
// is opened beneath `dir` (beneath.hpp), never through a symlink.
void write_small_at(int dir, const char* name, const std::string& text) {
  unique_fd fd = open_beneath(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::system_error(errno, std::generic_category(), std::string("write ") + name);
}

// The resolv.conf a networked sandbox sees: its resolver is on the host side of its link.
void write_resolv_conf(const std::string& path, const std::string& resolver) {
  std::string text = "nameserver " + resolver + "\noptions ndots:0 attempts:2\n";
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::system_error(errno, std::generic_category(), "write " + path);
  ::fchmod(fd.get(), 0644);
}

} // namespace

outcome<void> oci_driver::cli_step(const std::string& id, const char* step,
                                   const std::vector<std::string>& args, bool linked) {
  auto r = cli_.run(args, linked);
  if (r.ok)
    return {};
  return make_error(errc::internal,
                    std::string(name()) + " " + step + " of sandbox " + id + " failed: " + r.text);
}

std::optional<std::string> oci_driver::runtime_status(const std::string& id) const {
  auto r = cli_.run({"state", cid(id)});
  if (!r.ok)
    return std::nullopt;
  auto j = nlohmann::json::parse(r.text, nullptr, false);
  if (j.is_discarded())
    return std::nullopt;
  return j.value("status", "");
}

std::optional<sandbox_link> oci_driver::link_of_record(const sandbox_record& r) const {
  if (!r.info.link)
    return std::nullopt;
  sandbox_link l;
  l.slot = r.link_slot;
  l.netns_path = r.info.link->netns_path;
  l.host_interface = r.info.link->interface;
  l.host_address = r.info.link->host_address;
  l.sandbox_address = r.info.link->sandbox_address;
  l.sandbox_address6 = r.info.link->sandbox_address6;
  return l;
}

outcome<void> oci_driver::create_container(const sandbox_record& r, bool sync_new_record) {
  const std::string& id = r.info.id;
  mount_rootfs(r);
  // A new container: its agent connects to a new link (listening before the agent starts).
  if (r.agent)
    listen_for_agent(r, true);
  bundle_params bundle{overlay_of(r).target, cgroup_path(id), r.info.limits, r.id_base,
                       r.id_base != 0 ? exec_guard_path() : ""};
  if (r.agent)
    bundle.agent_dir = dir(id) + "/agent";
  bundle.in_gvisor = cli_.kind() == oci_runtime::runsc;
  auto link = link_of_record(r);
  if (link) {
    // A link a crash or a reboot took away is made again (its namespace is a mount).
    if (!link_present(*link))
      make_link(*link);
    bundle.netns_path = link->netns_path;
    bundle.resolv_conf = link->netns_path + ".resolv";
  }
  // The sandbox's directory is its OCI bundle: config.json beside the root filesystem.
  write_small_at(sandbox_fd(id).get(), "config.json", make_config_json(bundle));
  memfd_file pid_file;
  auto args = cli_.create_args(dir(id), cid(id), pid_file.path());
  // The new record's fsync (mostly waiting for the disk) runs while
  // the runtime creates the container (mostly CPU), not before it: started any earlier,
  // the commit would hold up the mount and the other writes above.
  std::optional<record_sync> sync;
  if (sync_new_record)
    sync.emplace(options_.data_dir, id);
  auto c = cli_step(id, "create", args, link.has_value());
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
    cli_.run({"resume", cid(id)}); // frozen processes cannot die
  cli_.run({"delete", "--force", cid(id)});
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
  if (auto c = check_env(req.env); !c)
    return c.err();
  if (!req.from_snapshot.empty())
    if (auto c = check_snapshot_id(req.from_snapshot); !c)
      return c.err();
  if (req.network != network_policy::none && !links_)
    return make_error(errc::invalid_argument,
                      std::string("driver ") + std::string(name()) +
                        " has no link range, so its sandboxes have no network; create it with "
                        "network none, or give the node a link range (docs/network.md)");
  auto g = locks_.lock(req.id);
  return guard_faults("create sandbox " + req.id, [&]() -> outcome<sandbox_info> {
    std::string d = dir(req.id);
    if (has_dir(req.id))
      return make_error(errc::conflict, "sandbox " + req.id + " already exists; pick another id");
    if (!req.from_snapshot.empty() && !layers_.snapshot_exists(req.from_snapshot))
      return make_error(errc::not_found, "snapshot " + req.from_snapshot +
                                           " is not on this node's " + std::string(name()) +
                                           " runtime; list snapshots");
    std::string root_dir;
    if (req.layers.empty()) {
      auto root = templates_.rootfs(req.template_name);
      if (!root)
        return root.err();
      root_dir = root.value();
    } else if (!options_.template_layers) {
      return make_error(errc::unavailable, "template " + req.template_name +
                                             " is made of layers, but this driver has no layer "
                                             "store; configure the node's template layers");
    } else {
      for (const auto& l : req.layers)
        if (!options_.template_layers->has(l))
          return make_error(errc::not_found, "layer " + l + " of template " + req.template_name +
                                               " is not in this node's layer store; build or "
                                               "import the template again");
    }
    sandbox_record r;
    r.info.id = req.id;
    r.info.template_name = req.template_name;
    r.info.limits = req.limits;
    r.info.status = sandbox_status::created;
    r.template_dir = root_dir;
    r.layers = req.layers;
    r.env = req.env;
    auto range = ids_.take();
    if (!range)
      return make_error(errc::resource_exhausted,
                        "every host id range of this node is in use; remove a sandbox first");
    r.id_base = range->base;
    std::optional<sandbox_link> link;
    if (req.network != network_policy::none) {
      // The link's slot is the sandbox's id range's: unique while the sandbox exists.
      std::uint32_t slot = (range->base - options_.id_ranges_first) / 65536;
      if (slot >= links_->slots()) {
        ids_.release(*range);
        return make_error(errc::resource_exhausted,
                          "every link of this node's link range " + options_.link_range +
                            " is in use; remove a sandbox with a network first");
      }
      link = sandboxd::runtime::link_of(*links_, slot, link_instance(),
                                        options_.data_dir + "/netns/" + req.id);
      r.link_slot = slot;
      r.info.link =
        network_link{link->host_interface, link->host_address,     link->sandbox_address,
                     link->netns_path,     link->sandbox_address6, req.tenant};
    }
    r.agent = uses_agent(r);
    auto undo = [&] {
      agents_.drop(req.id, "sandbox " + req.id + " could not be made");
      if (link) {
        remove_link(*link);
        ::unlink((link->netns_path + ".resolv").c_str());
      }
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
      if (req.from_snapshot.empty())
        layers_.create(req.id, range->base, range->base, req.limits.disk_bytes);
      else
        layers_.create_from(req.id, req.from_snapshot, range->base, req.limits.disk_bytes);
      save_record(options_.data_dir, r, record_write::first);
      if (link) {
        make_link(*link);
        write_resolv_conf(link->netns_path + ".resolv", link->host_address);
      }
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

outcome<void> oci_driver::set_env(const std::string& id,
                                  const std::vector<std::pair<std::string, std::string>>& env) {
  if (auto c = check_sandbox_id(id); !c)
    return c;
  if (auto c = check_env(env); !c)
    return c;
  auto g = locks_.lock(id);
  return guard_faults("set the environment of sandbox " + id, [&]() -> outcome<void> {
    auto r = find_record(options_.data_dir, id);
    if (!r)
      return r.err();
    r->env = env;
    save_record(options_.data_dir, r.value(), record_write::update);
    sync_record(options_.data_dir, id);
    return {};
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
      agents_.drop(id, "sandbox " + id + " is started afresh");
      delete_container(id, false);
      r->agent = uses_agent(r.value());
      if (auto c = create_container(r.value()); !c)
        return c;
    }
    if (auto c = start_container(r.value()); !c)
      return c;
    r->info.status = sandbox_status::running;
    save_record(options_.data_dir, r.value(), record_write::update);
    return {};
  });
}

outcome<void> oci_driver::start_container(const sandbox_record& r) {
  const std::string& id = r.info.id;
  // runsc configures the sandbox's netstack from the namespace at start, with start's flags.
  auto c = cli_step(id, "start", {"start", cid(id)}, r.info.link.has_value());
  if (!c)
    return c;
  pid_t init = 0;
  {
    std::lock_guard<std::mutex> g(init_pids_mu_);
    if (auto it = init_pids_.find(id); it != init_pids_.end())
      init = it->second;
  }
  cli_.await_started_init(init);
  return c;
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
      agents_.drop(id, "sandbox " + id + " was paused (filesystem) while the exec ran");
      delete_container(id, false);
      unmount_rootfs(r.value());
      r->info.status = sandbox_status::paused_filesystem;
    } else if (freezes()) {
      // Frozen, the agent answers nothing: nothing of it is overdue until the thaw.
      agents_.freeze(id);
      if (auto c = cli_step(id, "pause", {"pause", cid(id)}); !c) {
        agents_.thaw(id);
        return c;
      }
      r->info.status = sandbox_status::paused_memory;
    } else {
      std::string image = dir(id) + "/checkpoint";
      unique_fd sb = sandbox_fd(id);
      remove_tree_at(sb.get(), "checkpoint");
      if (::mkdirat(sb.get(), "checkpoint", 0700) != 0)
        throw std::system_error(errno, std::generic_category(), "mkdir " + image);
      if (auto c = cli_step(id, "checkpoint", {"checkpoint", "--image-path=" + image, cid(id)}); !c)
        return c;
      agents_.drop(id, "sandbox " + id + " was checkpointed");
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
      r->agent = uses_agent(r.value());
      auto made = create_container(r.value());
      if (!made) { // a resume a crash interrupted left its container: made afresh, once
        delete_container(id, false);
        made = create_container(r.value());
      }
      if (!made)
        return made;
      if (auto c = start_container(r.value()); !c)
        return c;
    } else if (freezes()) {
      // After a restart of this process the thawed agent connects to a new socket.
      if (r->agent)
        listen_for_agent(r.value(), false);
      if (auto c = cli_step(id, "resume", {"resume", cid(id)}); !c)
        return c;
      agents_.thaw(id);
    } else {
      std::string image = dir(id) + "/checkpoint";
      mount_rootfs(r.value());
      // The restored agent finds its connection gone and connects to a new link.
      if (r->agent)
        listen_for_agent(r.value(), true);
      if (auto c = cli_step(
            id, "restore",
            {"restore", "--detach", "--image-path=" + image, "--bundle=" + dir(id), cid(id)},
            r->info.link.has_value());
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
    agents_.drop(id, "sandbox " + id + " was removed while the exec ran");
    delete_container(id, !r || r->info.status == sandbox_status::paused_memory);
    if (r) {
      unmount_rootfs(*r, false);
    } else { // no record: whatever is mounted there goes
      unmount_path(d + "/merged");
      for (int i = 0; ::access((d + "/lower/" + std::to_string(i)).c_str(), F_OK) == 0; ++i)
        unmount_path(d + "/lower/" + std::to_string(i));
      unmount_path(d + "/lower");
    }
    if (layers_.exists(id))
      layers_.remove(id);
    {
      std::lock_guard<std::mutex> pg(init_pids_mu_);
      init_pids_.erase(id);
    }
    if (auto link = r ? link_of_record(*r) : std::nullopt) {
      remove_link(*link);
      ::unlink((link->netns_path + ".resolv").c_str());
    }
    if (r && r->id_base != 0)
      ids_.release({r->id_base});
    for (const char* ctrl :
         {"memory", "pids", "cpu", "cpuacct", "cpuset", "blkio", "devices", "freezer", "systemd"}) {
      std::string cg = std::string("/sys/fs/cgroup/") + ctrl + cgroup_path(id);
      ::rmdir(cg.c_str());
    }
    remove_agent_dir(id);
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

} // namespace sandboxd::runtime
