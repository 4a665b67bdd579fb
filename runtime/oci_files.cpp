// The OCI driver's file calls: every path resolved inside the sandbox's root (rooted_fs),
// on the mounted overlay, mounted for the call alone while filesystem-paused
// (oci_driver.hpp).
#include "runtime/oci_driver.hpp"

#include "runtime/child_process.hpp"
#include "runtime/exec_guard.hpp"
#include "runtime/exec_guard/agent_wire.h"
#include "runtime/lifecycle_rules.hpp"
#include "runtime/memfd_file.hpp"
#include "runtime/oci_spec.hpp"
#include "runtime/rooted_dirs.hpp"
#include "runtime/rooted_fs.hpp"

#include <cstdio>

namespace sandboxd::runtime {

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

bool oci_driver::changes_through_sandbox(const sandbox_record& r) const {
  return cli_.writes_through_sandbox() && r.id_base != 0 &&
         r.info.status == sandbox_status::running;
}

template <class Direct, class Through>
outcome<void> oci_driver::change_files(const std::string& id, Direct&& direct, Through&& through) {
  return with_files(id, true,
                    [&](const std::string& root, const sandbox_record& r) -> outcome<void> {
                      if (changes_through_sandbox(r))
                        return through(r);
                      return direct(root, r);
                    });
}

// Files the daemon makes belong to the sandbox's root, as if it had made them.
static std::optional<file_owner> owner_of(const sandbox_record& r) {
  if (r.id_base == 0)
    return std::nullopt;
  return file_owner{r.id_base, r.id_base};
}

// The path as the guard inside takes it: absolute, checked as split_in_root checks it.
static outcome<std::string> guard_path(std::string_view path) {
  auto split = split_in_root(path);
  if (!split)
    return split.err();
  return "/" + split->first + "/" + split->second;
}

static std::string octal(std::uint32_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "%o", mode & 0777);
  return text;
}

outcome<void> oci_driver::write_file(const std::string& id, const std::string& path,
                                     std::string_view content, std::uint32_t mode) {
  return change_files(
    id,
    [&](const std::string& root, const sandbox_record& r) {
      return write_file_in_root(root, path, content, mode, r.info.limits.max_file_bytes,
                                owner_of(r));
    },
    [&](const sandbox_record& r) -> outcome<void> {
      auto target = checked_write_path(path, content.size(), r.info.limits.max_file_bytes);
      if (!target)
        return target.err();
      return change_through_sandbox(r, path, {"--write", target.value(), octal(mode)}, content);
    });
}

outcome<void> oci_driver::make_dir(const std::string& id, const std::string& path, bool parents,
                                   std::uint32_t mode) {
  return change_files(
    id,
    [&](const std::string& root, const sandbox_record& r) {
      return make_dir_in_root(root, path, parents, mode, owner_of(r));
    },
    [&](const sandbox_record& r) -> outcome<void> {
      auto p = guard_path(path);
      if (!p)
        return p.err();
      return change_through_sandbox(r, path, {"--mkdir", *p, octal(mode), parents ? "p" : "-"});
    });
}

outcome<void> oci_driver::remove_path(const std::string& id, const std::string& path,
                                      bool recursive) {
  return change_files(
    id,
    [&](const std::string& root, const sandbox_record&) {
      return remove_in_root(root, path, recursive);
    },
    [&](const sandbox_record& r) -> outcome<void> {
      auto p = guard_path(path);
      if (!p)
        return p.err();
      return change_through_sandbox(r, path, {"--remove", *p, recursive ? "r" : "-"});
    });
}

outcome<void> oci_driver::rename_path(const std::string& id, const std::string& from,
                                      const std::string& to) {
  return change_files(
    id,
    [&](const std::string& root, const sandbox_record&) { return rename_in_root(root, from, to); },
    [&](const sandbox_record& r) -> outcome<void> {
      auto f = guard_path(from);
      if (!f)
        return f.err();
      auto t = guard_path(to);
      if (!t)
        return t.err();
      return change_through_sandbox(r, from, {"--rename", *f, *t});
    });
}

// The agent's builtin for a guard flag (exec_guard/agent_wire.h).
static std::uint8_t builtin_of(const std::string& flag) {
  if (flag == "--write")
    return SBA_BUILTIN_WRITE;
  if (flag == "--mkdir")
    return SBA_BUILTIN_MKDIR;
  if (flag == "--remove")
    return SBA_BUILTIN_REMOVE;
  return SBA_BUILTIN_RENAME;
}

outcome<void> oci_driver::change_through_sandbox(const sandbox_record& r, const std::string& path,
                                                 std::vector<std::string> args,
                                                 std::string_view content) {
  if (r.agent) {
    // The agent's own code does it in a process of its own, content on its stdin.
    agent_spawn s;
    s.builtin = builtin_of(args.front());
    s.argv = {"sandboxd-builtin"};
    s.argv.insert(s.argv.end(), args.begin() + 1, args.end());
    s.env = {"PATH=/usr/bin:/bin"};
    exec_request e;
    e.stdin_data = std::string(content);
    e.max_output_bytes = 4096;
    e.timeout = std::chrono::minutes(2);
    auto p = exec_through_agent(r, std::move(s), e, true);
    if (!p)
      return p.err();
    if (p->exit_code == 0)
      return {};
    if (int n = 0; std::sscanf(p->stderr_data.c_str(), "errno %d", &n) == 1)
      return error_of_errno(n, path);
    return make_error(errc::internal, "changing " + path + " in sandbox " + r.info.id +
                                        " failed: " + p->stderr_data + p->stdout_data);
  }
  exec_request e;
  e.argv = {k_exec_guard_in_sandbox};
  e.argv.insert(e.argv.end(), args.begin(), args.end());
  e.stdin_data = std::string(content);
  auto doc = make_process_json(e, r.info.limits.pids, false);
  if (!doc)
    return doc.err();
  memfd_file process_json(doc.value());
  process_options o = cli_.options({"exec", "--process=" + process_json.path(), cid(r.info.id)});
  o.stdin_data = e.stdin_data;
  o.timeout = std::chrono::minutes(2);
  auto p = run_process(o);
  if (p.exit_code == 0)
    return {};
  if (int e = 0; std::sscanf(p.err.c_str(), "errno %d", &e) == 1)
    return error_of_errno(e, path);
  return make_error(errc::internal,
                    "changing " + path + " in sandbox " + r.info.id + " failed: " + p.err + p.out);
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

} // namespace sandboxd::runtime
