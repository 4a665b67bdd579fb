#include "runtime/hollow_driver.hpp"

#include "runtime/beneath.hpp"

#include "runtime/lifecycle_rules.hpp"
#include "runtime/rooted_fs.hpp"
#include "runtime/sandbox_record.hpp"
#include "runtime/tree_walk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <system_error>
#include <thread>

namespace sandboxd::runtime {
namespace {

std::string root_of(const std::string& data_dir, const std::string& id) {
  return sandbox_dir(data_dir, id) + "/upper";
}

void append_capped(std::string& to, std::string_view data, const exec_request& req,
                   output_stream which, std::uint64_t cap, bool& truncated) {
  std::uint64_t room = cap > to.size() ? cap - to.size() : 0;
  if (data.size() > room) {
    truncated = true;
    data = data.substr(0, room);
  }
  to.append(data);
  if (req.on_output && !data.empty())
    req.on_output(which, data);
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
                      "driver hollow supports only network policy none; drop the network request");
  // No template is read here, but the name is checked as the real drivers check it.
  if (auto c = check_template_name(req.template_name); !c)
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

outcome<exec_result> hollow_driver::exec(const std::string& id, const exec_request& req) {
  wait_latency();
  auto r = find(id);
  if (!r)
    return r.err();
  if (auto c = check_allowed(r.value(), operation::exec); !c)
    return c.err();
  if (req.argv.empty())
    return make_error(errc::invalid_argument, "exec needs a program; argv is empty");
  const auto cap = req.max_output_bytes > 0 ? req.max_output_bytes : r->limits.max_output_bytes;
  exec_result res;
  const std::string& prog = req.argv[0];
  auto out = [&](output_stream s, std::string_view d) {
    append_capped(s == output_stream::out ? res.stdout_data : res.stderr_data, d, req, s, cap,
                  res.output_truncated);
  };
  if (prog == "echo") {
    std::string line;
    for (size_t i = 1; i < req.argv.size(); ++i)
      line += (i > 1 ? " " : "") + req.argv[i];
    out(output_stream::out, line + "\n");
    res.exit_code = 0;
  } else if (prog == "cat" && req.argv.size() == 1) {
    out(output_stream::out, req.stdin_data.value_or(""));
    for (std::string chunk; req.stdin_source && req.stdin_source(chunk); chunk.clear())
      out(output_stream::out, chunk);
    res.exit_code = 0;
  } else if (prog == "sleep" && req.argv.size() == 2) {
    auto wait = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::strtod(req.argv[1].c_str(), nullptr) * 1000));
    if (req.timeout.count() > 0 && req.timeout < wait) {
      wait = req.timeout;
      res.timed_out = true;
    }
    res.signal = sleep_exec(id + "/" + req.exec_id, wait);
    if (res.timed_out && res.signal == 0)
      res.signal = SIGKILL;
    res.timed_out = res.timed_out && res.signal == SIGKILL;
    res.exit_code = res.signal != 0 ? -1 : 0;
  } else if (prog == "true") {
    res.exit_code = 0;
  } else if (prog == "false") {
    res.exit_code = 1;
  } else {
    out(output_stream::err, prog + ": the hollow driver runs no programs\n");
    res.exit_code = 127;
  }
  return res;
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

outcome<std::string> hollow_driver::read_file(const std::string& id, const std::string& path) {
  wait_latency();
  auto r = find(id);
  if (!r)
    return r.err();
  return read_file_in_root(read_root(id), path, r->limits.max_file_bytes);
}

outcome<void> hollow_driver::write_file(const std::string& id, const std::string& path,
                                        std::string_view content, std::uint32_t mode) {
  wait_latency();
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  const std::string root = root_of(options_.data_dir, id);
  return guard_faults("write to sandbox " + id, [&]() -> outcome<void> {
    std::uint64_t max_bytes = 0;
    {
      // The layer is made under the lock, so a remove() either sees it or refuses this
      // call first.
      std::lock_guard<std::mutex> g(mu_);
      const sandbox_info* info = table_.find(id);
      if (!info || removing_.count(id))
        return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
      if (auto c = check_allowed(*info, operation::write); !c)
        return c;
      max_bytes = info->limits.max_file_bytes;
      std::filesystem::create_directories(root);
    }
    return write_file_in_root(root, path, content, mode, max_bytes);
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

int hollow_driver::sleep_exec(const std::string& key, std::chrono::milliseconds for_how_long) {
  std::unique_lock l(sleep_mu_);
  auto [it, fresh] = sleeping_.emplace(key, 0);
  if (!fresh)
    it->second = 0;
  sleep_cv_.wait_for(l, for_how_long, [&] { return sleeping_.at(key) != 0; });
  const int signal = sleeping_.at(key);
  sleeping_.erase(key);
  return signal;
}

outcome<void> hollow_driver::signal_exec(const std::string& id, const std::string& exec_id,
                                         int signal) {
  wait_latency();
  if (auto r = find(id); !r)
    return r.err();
  std::lock_guard l(sleep_mu_);
  auto it = sleeping_.find(id + "/" + exec_id);
  if (it == sleeping_.end())
    return make_error(errc::not_found, "exec " + exec_id + " of sandbox " + id +
                                         " is not running; list the execs in flight");
  it->second = signal;
  sleep_cv_.notify_all();
  return {};
}

outcome<void>
hollow_driver::change_files(const std::string& id, const std::string& what,
                            const std::function<outcome<void>(const std::string&)>& change) {
  wait_latency();
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  const std::string root = root_of(options_.data_dir, id);
  return guard_faults(what + " in sandbox " + id, [&]() -> outcome<void> {
    {
      std::lock_guard<std::mutex> g(mu_);
      const sandbox_info* info = table_.find(id);
      if (!info || removing_.count(id))
        return make_error(errc::not_found, "sandbox " + id + " not found; create it first");
      if (auto c = check_allowed(*info, operation::write); !c)
        return c;
      std::filesystem::create_directories(root);
    }
    return change(root);
  });
}

namespace {

// `path` inside `root`, after the checks writes make; `..` components are refused.
outcome<std::string> host_path(const std::string& root, const std::string& path) {
  auto p = checked_write_path(path, 0, 1);
  if (!p)
    return p.err();
  if (p.value().find("/../") != std::string::npos || p.value().ends_with("/.."))
    return make_error(errc::invalid_argument, "path " + path +
                                                " has a '..' component; use "
                                                "an absolute path without one");
  return root + p.value();
}

outcome<void> errno_result(const std::error_code& ec, const std::string& path) {
  if (!ec)
    return {};
  return error_of_errno(ec.value(), path);
}

} // namespace

outcome<void> hollow_driver::make_dir(const std::string& id, const std::string& path, bool parents,
                                      std::uint32_t mode) {
  return change_files(id, "make_dir " + path, [&](const std::string& root) -> outcome<void> {
    auto p = host_path(root, path);
    if (!p)
      return p.err();
    std::error_code ec;
    if (parents)
      std::filesystem::create_directories(p.value(), ec);
    else if (::mkdir(p.value().c_str(), mode & 0777) != 0)
      ec = std::error_code(errno, std::generic_category());
    return errno_result(ec, path);
  });
}

outcome<void> hollow_driver::remove_path(const std::string& id, const std::string& path,
                                         bool recursive) {
  return change_files(id, "remove " + path, [&](const std::string& root) -> outcome<void> {
    auto p = host_path(root, path);
    if (!p)
      return p.err();
    std::error_code ec;
    if (recursive) {
      if (std::filesystem::remove_all(p.value(), ec) == 0 && !ec)
        return make_error(errc::not_found, path + " does not exist; check the path");
    } else if (!std::filesystem::remove(p.value(), ec) && !ec) {
      return make_error(errc::not_found, path + " does not exist; check the path");
    }
    return errno_result(ec, path);
  });
}

outcome<void> hollow_driver::rename_path(const std::string& id, const std::string& from,
                                         const std::string& to) {
  return change_files(id, "rename " + from, [&](const std::string& root) -> outcome<void> {
    auto f = host_path(root, from);
    if (!f)
      return f.err();
    auto t = host_path(root, to);
    if (!t)
      return t.err();
    std::error_code ec;
    std::filesystem::rename(f.value(), t.value(), ec);
    return errno_result(ec, from);
  });
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
