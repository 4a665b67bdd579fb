#include "runtime/hollow_driver.hpp"

#include "runtime/beneath.hpp"

#include "runtime/lifecycle_rules.hpp"
#include "runtime/names.hpp"
#include "runtime/rooted_dirs.hpp"
#include "runtime/rooted_fs.hpp"
#include "runtime/sandbox_record.hpp"
#include "runtime/tree_walk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <system_error>
#include <thread>

namespace sandboxd::runtime {
namespace {

std::string root_of(const std::string& data_dir, const std::string& id) {
  return sandbox_dir(data_dir, id) + "/upper";
}

// Makes the driver's directories; returns the journal's path.
std::string prepare(const std::string& data_dir) {
  std::filesystem::create_directories(data_dir + "/sandboxes");
  // Sandbox content is the daemon's alone (no runtime needs to reach it here).
  ::chmod(data_dir.c_str(), 0700);
  std::filesystem::create_directories(data_dir + "/empty-root");
  return data_dir + "/hollow.journal";
}

} // namespace

hollow_driver::hollow_driver(hollow_options options)
    : options_(std::move(options)), empty_root_(options_.data_dir + "/empty-root"),
      table_(prepare(options_.data_dir), options_.sync) {
  const std::string dir = options_.data_dir + "/sandboxes";
  sandboxes_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sandboxes_fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "open " + dir);
}

hollow_driver::~hollow_driver() {
  ::close(sandboxes_fd_);
}

bool hollow_driver::surely_no_dir(const std::string& id) const {
  constexpr std::int64_t k_quiet_ns = 50'000'000;
  constexpr std::size_t k_max_listed = 4096;
  std::lock_guard<std::mutex> g(dirs_mu_);
  if (dirs_disabled_)
    return false;
  struct ::stat st {};
  if (::fstat(sandboxes_fd_, &st) != 0)
    return false;
  const std::int64_t mtime = std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (mtime != dirs_mtime_ns_) {
    dirs_mtime_ns_ = -1;
    ::timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    if (std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec - mtime < k_quiet_ns)
      return false; // changed just now: a change in the same tick would keep this mtime
    dirs_.clear();
    std::error_code ec;
    for (std::filesystem::directory_iterator it(options_.data_dir + "/sandboxes", ec), end;
         !ec && it != end; it.increment(ec))
      dirs_.insert(it->path().filename().string());
    if (ec)
      return false;
    if (dirs_.size() > k_max_listed) {
      // Listing again after every change would cost more than the lookups it saves.
      dirs_disabled_ = true;
      dirs_.clear();
      return false;
    }
    dirs_mtime_ns_ = mtime;
  }
  return dirs_.count(id) == 0;
}

void hollow_driver::wait_latency() const {
  if (options_.latency.count() > 0)
    std::this_thread::sleep_for(options_.latency);
}

outcome<sandbox_info> hollow_driver::find(const std::string& id) const {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  std::lock_guard<std::mutex> g(mu_);
  const sandbox_info* info = table_.find(id);
  if (!info || removing_.count(id))
    return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
  return *info;
}

std::string hollow_driver::read_root(const std::string& id) const {
  if (surely_no_dir(id))
    return empty_root_;
  std::string root = root_of(options_.data_dir, id);
  return ::access(root.c_str(), F_OK) == 0 ? root : empty_root_;
}

outcome<sandbox_info> hollow_driver::create(const create_request& req) {
  wait_latency();
  if (auto c = check_sandbox_id(req.id); !c)
    return c.err();
  if (req.network != network_policy::none)
    return make_error(errc::invalid_argument,
                      "driver hollow runs no processes, so its sandboxes have no network; create "
                      "it with network none");
  // No template is read here, but the name is checked as the real drivers check it.
  if (auto c = check_template_name(req.template_name); !c)
    return c.err();
  if (auto c = check_env(req.env); !c)
    return c.err();
  return guard_faults("create sandbox " + req.id, [&]() -> outcome<sandbox_info> {
    std::lock_guard<std::mutex> g(mu_);
    // A directory without a table entry is the remains of a sandbox the journal lost
    // (a power loss without sync); remove() clears it.
    if (table_.find(req.id) ||
        (!surely_no_dir(req.id) &&
         ::access(sandbox_dir(options_.data_dir, req.id).c_str(), F_OK) == 0))
      return make_error(errc::conflict, "sandbox " + req.id + " already exists; pick another id");
    sandbox_info info;
    info.id = req.id;
    info.template_name = req.template_name;
    info.limits = req.limits;
    info.status = sandbox_status::created;
    if (!req.env.empty()) {
      // The environment is kept as the real drivers keep it: in the sandbox's record.
      const std::string dir = sandbox_dir(options_.data_dir, req.id);
      if (::mkdir(dir.c_str(), 0700) != 0)
        throw std::system_error(errno, std::generic_category(), "mkdir " + dir);
      save_record(options_.data_dir, sandbox_record{info, "", 0, req.env}, record_write::first);
    }
    table_.insert(info);
    return info;
  });
}

outcome<void> hollow_driver::transition(const std::string& id, operation op, sandbox_status to) {
  wait_latency();
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  return guard_faults("sandbox " + id, [&]() -> outcome<void> {
    std::lock_guard<std::mutex> g(mu_);
    const sandbox_info* info = table_.find(id);
    if (!info || removing_.count(id))
      return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
    if (auto c = check_allowed(*info, op); !c)
      return c;
    table_.set_status(id, to);
    return {};
  });
}

outcome<void> hollow_driver::start(const std::string& id) {
  return transition(id, operation::start, sandbox_status::running);
}

outcome<void> hollow_driver::pause(const std::string& id, pause_mode mode) {
  return transition(id, operation::pause,
                    mode == pause_mode::filesystem ? sandbox_status::paused_filesystem
                                                   : sandbox_status::paused_memory);
}

outcome<void> hollow_driver::resume(const std::string& id) {
  return transition(id, operation::resume, sandbox_status::running);
}

outcome<void> hollow_driver::remove(const std::string& id) {
  wait_latency();
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  const std::string dir = sandbox_dir(options_.data_dir, id);
  return guard_faults("remove sandbox " + id, [&]() -> outcome<void> {
    bool known = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (removing_.count(id))
        return make_error(errc::not_found, "sandbox " + id + " is being removed already");
      known = table_.find(id) != nullptr;
      if (!known && ::access(dir.c_str(), F_OK) != 0)
        return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
      removing_.insert(id);
    }
    // The files go first: a crash in between leaves an entry whose removal is retried.
    try {
      if (!surely_no_dir(id))
        remove_tree_at(sandboxes_fd_, id);
    } catch (...) {
      std::lock_guard<std::mutex> g(mu_);
      removing_.erase(id);
      throw;
    }
    std::lock_guard<std::mutex> g(mu_);
    removing_.erase(id);
    if (known)
      table_.erase(id);
    return {};
  });
}

outcome<void> hollow_driver::set_env(const std::string& id,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  wait_latency();
  if (auto c = check_env(env); !c)
    return c;
  auto r = find(id);
  if (!r)
    return r.err();
  return guard_faults("set the environment of sandbox " + id, [&]() -> outcome<void> {
    // Kept as create keeps it: in the sandbox's record, made when there is something to keep.
    const std::string dir = sandbox_dir(options_.data_dir, id);
    const bool had_dir = ::access(dir.c_str(), F_OK) == 0;
    const bool had_record = had_dir && load_record(options_.data_dir, id).has_value();
    if (!had_record && env.empty())
      return {};
    if (!had_dir && ::mkdir(dir.c_str(), 0700) != 0)
      throw std::system_error(errno, std::generic_category(), "mkdir " + dir);
    save_record(options_.data_dir, sandbox_record{r.value(), "", 0, env},
                had_record ? record_write::update : record_write::first);
    if (options_.sync)
      sync_record(options_.data_dir, id);
    return {};
  });
}

outcome<std::string> hollow_driver::read_file(const std::string& id, const std::string& path) {
  wait_latency();
  auto r = find(id);
  if (!r)
    return r.err();
  return read_file_in_root(read_root(id), path, r->limits.max_file_bytes);
}

template <class F>
outcome<void> hollow_driver::change_files(const std::string& id, F&& f) {
  wait_latency();
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  const std::string root = root_of(options_.data_dir, id);
  return guard_faults("files of sandbox " + id, [&]() -> outcome<void> {
    sandbox_info info;
    {
      // The layer is made under the lock, so a remove() either sees it or refuses this
      // call first.
      std::lock_guard<std::mutex> g(mu_);
      const sandbox_info* found = table_.find(id);
      if (!found || removing_.count(id))
        return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
      if (auto c = check_allowed(*found, operation::write); !c)
        return c;
      info = *found;
      std::filesystem::create_directories(root);
    }
    return f(root, info);
  });
}

outcome<void> hollow_driver::write_file(const std::string& id, const std::string& path,
                                        std::string_view content, std::uint32_t mode) {
  return change_files(id, [&](const std::string& root, const sandbox_info& info) {
    return write_file_in_root(root, path, content, mode, info.limits.max_file_bytes);
  });
}

outcome<void> hollow_driver::make_dir(const std::string& id, const std::string& path, bool parents,
                                      std::uint32_t mode) {
  return change_files(id, [&](const std::string& root, const sandbox_info&) {
    return make_dir_in_root(root, path, parents, mode, std::nullopt);
  });
}

outcome<void> hollow_driver::remove_path(const std::string& id, const std::string& path,
                                         bool recursive) {
  return change_files(id, [&](const std::string& root, const sandbox_info&) {
    return remove_in_root(root, path, recursive);
  });
}

outcome<void> hollow_driver::rename_path(const std::string& id, const std::string& from,
                                         const std::string& to) {
  return change_files(id, [&](const std::string& root, const sandbox_info&) {
    return rename_in_root(root, from, to);
  });
}

outcome<dir_listing> hollow_driver::list_dir(const std::string& id, const std::string& path) {
  wait_latency();
  auto r = find(id);
  if (!r)
    return r.err();
  return list_dir_in_root(read_root(id), path, r->limits.max_dir_entries);
}

outcome<file_info> hollow_driver::stat(const std::string& id, const std::string& path) {
  wait_latency();
  auto r = find(id);
  if (!r)
    return r.err();
  return stat_in_root(read_root(id), path);
}

outcome<usage_info> hollow_driver::usage(const std::string& id) {
  wait_latency();
  auto r = find(id);
  if (!r)
    return r.err();
  usage_info u;
  if (!surely_no_dir(id))
    if (unique_fd dir = open_beneath(sandboxes_fd_, id, O_PATH | O_DIRECTORY | O_NOFOLLOW))
      u.writable_bytes = tree_bytes_at(dir.get(), "upper"); // a missing layer is 0
  return u;
}

outcome<sandbox_info> hollow_driver::inspect(const std::string& id) {
  wait_latency();
  return find(id);
}

outcome<std::vector<sandbox_info>> hollow_driver::list() {
  wait_latency();
  std::lock_guard<std::mutex> g(mu_);
  return table_.all();
}

} // namespace sandboxd::runtime
