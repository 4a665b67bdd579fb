// The OCI driver's exec: one process in a running sandbox, under the exec guard, with its
// output captured and streamed, its timeout and its process tree's kill (oci_driver.hpp).
#include "runtime/oci_driver.hpp"

#include "runtime/child_process.hpp"
#include "runtime/crun_startup.hpp"
#include "runtime/host_process.hpp"
#include "runtime/lifecycle_rules.hpp"
#include "runtime/memfd_file.hpp"
#include "runtime/oci_spec.hpp"
#include "runtime/rooted_fs.hpp"

#include <csignal>
#include <fstream>
#include <thread>

namespace sandboxd::runtime {
namespace {

// How long after an exec's timeout the driver stops waiting for its guard.
constexpr std::chrono::seconds k_guard_grace{5};

// What the caller sees of the runtime's exec, `p`.
exec_result to_exec_result(process_result& p, bool guard_timed_out) {
  exec_result res;
  res.stdout_data = std::move(p.out);
  res.stderr_data = std::move(p.err);
  res.output_truncated = p.truncated;
  res.timed_out = p.timed_out || guard_timed_out;
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
  return res;
}

// The most of /etc/passwd and /etc/group an exec's user is looked up in.
constexpr std::uint64_t k_max_account_file = 1u << 20;

// The exec's user (exec_request::user) from the sandbox's /etc/passwd and /etc/group as its
// root filesystem (`root`, the mounted overlay) holds them; nullopt for root.
outcome<std::optional<exec_user>> user_of(const std::string& root, const std::string& spec) {
  if (is_root_user(spec))
    return std::optional<exec_user>();
  std::string files[2];
  const char* paths[2] = {"/etc/passwd", "/etc/group"};
  for (int i = 0; i < 2; ++i) {
    auto text = read_file_in_root(root, paths[i], k_max_account_file);
    if (text)
      files[i] = std::move(text).value();
    else if (text.err().code != errc::not_found)
      return make_error(text.err().code, "the exec's user '" + spec.substr(0, 64) +
                                           "' cannot be looked up in the sandbox's " + paths[i] +
                                           ": " + text.err().message);
  }
  auto u = resolve_exec_user(spec, files[0], files[1]);
  if (!u)
    return u.err();
  return std::optional<exec_user>(std::move(u).value());
}

} // namespace

std::uint64_t oci_driver::oom_kills(const std::string& id) const {
  std::ifstream in("/sys/fs/cgroup/memory" + cgroup_path(id) + "/memory.oom_control");
  std::string key;
  std::uint64_t v = 0;
  while (in >> key >> v)
    if (key == "oom_kill")
      return v;
  return 0;
}

outcome<exec_result> oci_driver::exec(const std::string& id, const exec_request& req) {
  if (auto c = check_sandbox_id(id); !c)
    return c.err();
  return guard_faults("exec in sandbox " + id, [&]() -> outcome<exec_result> {
    sandbox_record rec;
    std::optional<exec_user> user;
    {
      auto g = locks_.lock(id);
      auto r = find_record(options_.data_dir, id);
      if (!r)
        return r.err();
      if (auto c = check_allowed(r->info, operation::exec); !c)
        return c.err();
      rec = r.value();
      // Running: its overlay is mounted (and stays so while the lock is held).
      auto u = user_of(dir(id) + "/merged", req.user);
      if (!u)
        return u.err();
      user = std::move(u).value();
    }
    if (req.stdin_data && req.stdin_source)
      return make_error(errc::invalid_argument,
                        "exec takes stdin_data or stdin_source, not both; drop one");
    // The sandbox's environment, with the exec's over it (the last value of a name counts);
    // below both, the user's HOME.
    exec_request full = req;
    full.env.clear();
    if (user)
      full.env.emplace_back("HOME", user->home);
    full.env.insert(full.env.end(), rec.env.begin(), rec.env.end());
    full.env.insert(full.env.end(), req.env.begin(), req.env.end());
    if (req.terminal) {
      const auto [cols, rows] = *req.terminal;
      if (cols == 0 || rows == 0 || cols > SBA_MAX_TERMINAL_SIDE || rows > SBA_MAX_TERMINAL_SIDE)
        return make_error(errc::invalid_argument, "a terminal of " + std::to_string(cols) + "x" +
                                                    std::to_string(rows) + " is not one: give 1-" +
                                                    std::to_string(SBA_MAX_TERMINAL_SIDE) +
                                                    " columns and rows");
      if (!rec.agent)
        return make_error(errc::invalid_argument,
                          "sandbox " + id +
                            " runs without its agent (made by an older sandboxd), which makes "
                            "terminals; pause it (filesystem) and resume it to run one");
    }
    if (!rec.agent)
      return exec_through_runtime(rec, full, user ? &*user : nullptr);
    auto env = exec_environment(full);
    if (!env)
      return env.err();
    agent_spawn spawn;
    spawn.argv = full.argv;
    spawn.env = std::move(env).value();
    spawn.cwd = full.cwd;
    spawn.pty = req.terminal;
    if (user) {
      spawn.user.emplace({user->uid, user->gid});
      spawn.user->insert(spawn.user->end(), user->groups.begin(), user->groups.end());
    }
    return exec_through_agent(rec, std::move(spawn), full);
  });
}

outcome<exec_result> oci_driver::exec_through_runtime(const sandbox_record& rec,
                                                      const exec_request& full,
                                                      const exec_user* user) {
  const std::string& id = rec.info.id;
  const exec_request& req = full;
  return guard_faults("exec in sandbox " + id, [&]() -> outcome<exec_result> {
    // Sandboxes of the current layout run every exec under the guard (exec_guard.hpp).
    const bool guarded = rec.id_base != 0;
    auto doc = make_process_json(full, rec.info.limits.pids, guarded, user);
    if (!doc)
      return doc.err();
    memfd_file process_json(doc.value());
    exec_pid_file pid_file(cli_.kind(), cli_.state_root() + "/scratch");
    const unsigned long long began = boot_ticks_now();
    // The exec's first process (its guard), once the runtime has written its pid.
    auto first_process = [&] {
      return exec_process{cid(id), pid_file.read(), cgroup_path(id), began};
    };
    auto running = execs_.add(id, req.exec_id, [&](int signal) -> outcome<void> {
      // The runtime writes the pid once the process exists: wait for it a little.
      exec_process e = first_process();
      for (int i = 0; e.pid_text.empty() && i < 500; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        e = first_process();
      }
      // Just after start the guard may not have started the program yet: nothing below it
      // to signal. The exec is registered until it returns, so wait for its program a little.
      bool signalled = cli_.signal_exec_tree(e, signal);
      for (int i = 0; !signalled && !e.pid_text.empty() && i < 200; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        signalled = cli_.signal_exec_tree(e, signal);
      }
      if (!signalled)
        return make_error(errc::not_found, "exec " + req.exec_id + " in sandbox " + id +
                                             " has no process left to signal");
      return {};
    });
    if (!running)
      return running.err();
    process_options o =
      cli_.options({"exec", "--process=" + process_json.path(), pid_file.flag(), cid(id)});
    o.stdin_data = req.stdin_data;
    o.stdin_source = req.stdin_source;
    o.max_output_bytes =
      req.max_output_bytes != 0 ? req.max_output_bytes : rec.info.limits.max_output_bytes;
    // With crun, stderr is held back while it could still be crun's own start-up failure
    // (below), so that the caller never sees that text from an attempt that is retried.
    startup_filter filter(req.on_output, cli_.exec_may_fail_startup());
    if (req.on_output)
      o.on_output = [&](output_stream s, std::string_view d) { filter.take(s, d); };
    // The guard ends the exec at its timeout; the driver's own deadline, a little later,
    // is the backstop should the guard not act (code in the sandbox may stop it): it kills
    // the tree below the guard from outside. A guard that is gone has no tree left to
    // find (docs/security.md, "Exec tracking").
    // No timeout: none at all.
    if (req.timeout.count() > 0) {
      o.timeout = guarded ? req.timeout + k_guard_grace : req.timeout;
      o.on_timeout = [&] { cli_.kill_exec_tree(first_process()); };
    }
    std::uint64_t ooms = oom_kills(id);
    const auto started = std::chrono::steady_clock::now();
    auto p = run_process(o);
    // crun fails to join a container whose init is still in crun's own code ("setns(...):
    // Operation not permitted", "fail startup"; about once in 25 execs right after a start
    // on a loaded machine, before start_container waited for the init). The program never
    // ran: should it still happen, run it again.
    for (int retry = 0; retry < 3 && cli_.exec_may_fail_startup() && crun_failed_startup(p);
         ++retry) {
      filter.discard();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      p = run_process(o);
    }
    filter.flush();
    const auto took = std::chrono::steady_clock::now() - started;
    const bool guard_timed_out =
      guarded && req.timeout.count() > 0 && p.exit_code == 128 + SIGKILL && took >= req.timeout;

    exec_result res = to_exec_result(p, guard_timed_out);
    res.oom_killed = oom_kills(id) > ooms;
    res.duration = std::chrono::duration_cast<std::chrono::milliseconds>(took);
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

outcome<void> oci_driver::resize_exec(const std::string& id, const std::string& exec_id,
                                      std::uint16_t cols, std::uint16_t rows) {
  if (auto c = check_sandbox_id(id); !c)
    return c;
  if (cols == 0 || rows == 0 || cols > SBA_MAX_TERMINAL_SIDE || rows > SBA_MAX_TERMINAL_SIDE)
    return make_error(errc::invalid_argument, "a terminal of " + std::to_string(cols) + "x" +
                                                std::to_string(rows) + " is not one: give 1-" +
                                                std::to_string(SBA_MAX_TERMINAL_SIDE) +
                                                " columns and rows");
  return guard_faults("resize exec " + exec_id + " in sandbox " + id,
                      [&] { return execs_.resize(id, exec_id, cols, rows); });
}

outcome<void> oci_driver::signal_exec(const std::string& id, const std::string& exec_id,
                                      int signal) {
  if (auto c = check_sandbox_id(id); !c)
    return c;
  return guard_faults("signal exec " + exec_id + " in sandbox " + id,
                      [&] { return execs_.signal(id, exec_id, signal); });
}

} // namespace sandboxd::runtime
