// The OCI driver's side of the agent (oci_driver.hpp, agent_hub.hpp): the socket directory of
// each sandbox, execs and file changes through the agent, and what a failed agent link does
// to its sandbox.
#include "runtime/oci_driver.hpp"

#include "runtime/beneath.hpp"
#include "runtime/child_process.hpp"
#include "runtime/lifecycle_rules.hpp"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

// The signal an exec's end reports, from the wait status its guard saw.
void take_status(exec_result& res, std::int32_t status, std::uint32_t flags) {
  res.timed_out = (flags & SBA_EXIT_TIMED_OUT) != 0;
  res.output_truncated = res.output_truncated || (flags & SBA_EXIT_TRUNCATED) != 0;
  if (WIFSIGNALED(status)) {
    res.exit_code = -1;
    res.signal = WTERMSIG(status);
  } else {
    res.exit_code = WEXITSTATUS(status);
  }
  if (res.timed_out) {
    res.exit_code = -1;
    res.signal = SIGKILL;
  }
}

} // namespace

void oci_driver::set_failure_listener(failure_listener l) {
  std::lock_guard g(failures_mu_);
  listener_ = std::move(l);
}

void oci_driver::listen_for_agent(const sandbox_record& r, bool fresh) {
  const std::string& id = r.info.id;
  if (!fresh && agents_.listening(id))
    return;
  unique_fd sb = sandbox_fd(id);
  // Root's, and only the sandbox's root (its group) may pass: to reach the socket.
  if (::mkdirat(sb.get(), "agent", 0710) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "mkdir " + dir(id) + "/agent");
  unique_fd d = open_beneath(sb.get(), "agent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!d || ::fchown(d.get(), 0, r.id_base) != 0 || ::fchmod(d.get(), 0710) != 0)
    throw std::system_error(errno, std::generic_category(), "chown " + dir(id) + "/agent");
  agents_.listen(id, d.get(), r.id_base, fresh);
}

void oci_driver::remove_agent_dir(const std::string& id) {
  unique_fd sb = sandbox_fd(id);
  if (unique_fd d = open_beneath(sb.get(), "agent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) {
    ::unlinkat(d.get(), SBA_SOCKET_NAME, 0);
    ::unlinkat(sb.get(), "agent", AT_REMOVEDIR);
  }
}

outcome<exec_result> oci_driver::exec_through_agent(const sandbox_record& r, agent_spawn spawn,
                                                    const exec_request& req, bool locked) {
  const std::string& id = r.info.id;
  listen_for_agent(r, false);
  const std::uint64_t cap =
    req.max_output_bytes != 0 ? req.max_output_bytes : r.info.limits.max_output_bytes;
  spawn.stdin_pipe =
    req.stdin_data.has_value() || static_cast<bool>(req.stdin_source) || spawn.pty.has_value();
  spawn.max_output = cap;
  spawn.timeout_ms = req.timeout.count() > 0 ? static_cast<std::uint64_t>(req.timeout.count()) : 0;

  // Registered before the program runs (a second exec with its id is refused first); a signal
  // that comes before the stream is open waits for it.
  std::optional<agent_stream> stream;
  std::mutex stream_mu;
  std::condition_variable stream_cv;
  bool stream_settled = false;
  auto running = execs_.add(
    id, req.exec_id,
    [&](int signal) -> outcome<void> {
      {
        std::unique_lock g(stream_mu);
        stream_cv.wait_for(g, exec_registry::k_start_wait, [&] { return stream_settled; });
      }
      auto n = stream ? stream->signal(signal, exec_registry::k_start_wait)
                      : outcome<std::uint32_t>(std::uint32_t{0});
      if (!n)
        return n.err();
      if (n.value() == 0)
        return make_error(errc::not_found, "exec " + req.exec_id + " in sandbox " + id +
                                             " has no process left to signal");
      return {};
    },
    !spawn.pty ? exec_registry::resizer()
               : [&](std::uint16_t cols, std::uint16_t rows) -> outcome<void> {
      {
        std::unique_lock g(stream_mu);
        stream_cv.wait_for(g, exec_registry::k_start_wait, [&] { return stream_settled; });
      }
      if (stream)
        stream->resize(cols, rows);
      return {};
    });
  if (!running)
    return running.err();
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t ooms = oom_kills(id);
  auto opened = agents_.open(id, std::move(spawn), req.timeout);
  {
    std::lock_guard g(stream_mu);
    if (opened)
      stream.emplace(std::move(opened.value()));
    stream_settled = true;
  }
  stream_cv.notify_all();
  if (!opened)
    return opened.err();

  // stdin: what fits the agent's first credit at once; more, or a source, from a thread of its
  // own (a source may block; the output is read meanwhile). Once the program has ended no
  // further chunk is pulled; a pull in progress is waited for.
  std::atomic<bool> ended{false};
  std::thread feeder;
  if (req.stdin_data && req.stdin_data->size() <= SBA_STDIN_WINDOW) {
    stream->write_stdin(*req.stdin_data);
    stream->end_stdin();
  } else if (req.stdin_data || req.stdin_source) {
    feeder = std::thread([&] {
      if (req.stdin_data) {
        stream->write_stdin(*req.stdin_data);
      } else {
        std::string chunk;
        while (!ended && req.stdin_source(chunk)) {
          if (!stream->write_stdin(chunk))
            break;
          chunk.clear();
        }
      }
      stream->end_stdin();
    });
  }
  struct join_feeder {
    std::thread& t;
    std::atomic<bool>& ended;
    ~join_feeder() {
      ended = true;
      if (t.joinable())
        t.join();
    }
  } joined{feeder, ended};

  exec_result res;
  std::uint64_t got[2] = {0, 0};
  const std::size_t keep = req.on_output ? k_kept_when_streamed : cap;
  std::optional<error> failure;
  bool stopped_check = false;
  for (bool over = false; !over;) {
    auto n = stream->next();
    if (!n.event) {
      if (n.end == stream_end::dropped) {
        // Paused or removed meanwhile: its processes were ended with the container.
        res.exit_code = -1;
        res.signal = SIGKILL;
      } else if (n.end == stream_end::replaced) {
        failure = make_error(errc::unavailable, n.reason);
      } else {
        stopped_check = true;
        failure = make_error(errc::internal, n.reason + "; the sandbox is marked failed");
      }
      break;
    }
    auto& e = *n.event;
    switch (e.what) {
    case stream_event::type::out:
    case stream_event::type::err: {
      const int k = e.what == stream_event::type::err;
      const std::uint64_t room = cap > got[k] ? cap - got[k] : 0;
      std::string_view data(e.data);
      if (data.size() > room) {
        data = data.substr(0, room);
        res.output_truncated = true;
      }
      got[k] += data.size();
      std::string& kept = k ? res.stderr_data : res.stdout_data;
      if (kept.size() < keep)
        kept.append(data.substr(0, std::min<std::size_t>(data.size(), keep - kept.size())));
      if (req.on_output && !data.empty())
        req.on_output(k ? output_stream::err : output_stream::out, data);
      stream->grant(static_cast<std::uint32_t>(e.data.size()));
      break;
    }
    case stream_event::type::exited:
      take_status(res, e.status, e.value);
      over = true;
      break;
    case stream_event::type::failed:
      failure = make_error(e.status == EMFILE || e.status == EAGAIN || e.status == ENOMEM
                             ? errc::resource_exhausted
                             : errc::internal,
                           "sandbox " + id + " could not start the program: " + e.data + " (" +
                             std::strerror(e.status) + ")");
      over = true;
      break;
    default:
      break;
    }
  }
  ended = true;
  res.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::steady_clock::now() - started);
  res.oom_killed = oom_kills(id) > ooms;
  // A kill, or the agent gone, may mean the whole sandbox ended (runsc over its limits).
  if (stopped_check || res.oom_killed || res.signal != 0) {
    auto check = [&] {
      auto now = load_record(options_.data_dir, id);
      if (!now)
        return;
      refresh_status(*now);
      if (now->info.status != sandbox_status::stopped)
        return;
      failure.reset();
      res.exit_code = -1;
      if (res.signal == 0)
        res.signal = SIGKILL;
      res.stderr_data += "\nsandbox " + id + " stopped while the exec ran" +
                         (res.oom_killed ? " (memory limit)" : "") + "; start it again";
    };
    if (locked) {
      check();
    } else {
      auto g = locks_.lock(id);
      check();
    }
  }
  if (failure)
    return *failure;
  return res;
}

void oci_driver::failure_loop() {
  std::unique_lock g(failures_mu_);
  for (;;) {
    failures_cv_.wait(g, [&] { return failures_stop_ || !failures_.empty(); });
    if (failures_stop_)
      return;
    auto [id, reason] = std::move(failures_.front());
    failures_.pop_front();
    g.unlock();
    try {
      on_agent_failure(id, reason);
    } catch (const std::exception&) {
      // The sandbox's record or runtime could not be read: reported all the same below.
    }
    g.lock();
  }
}

void oci_driver::on_agent_failure(const std::string& id, const std::string& reason) {
  {
    auto g = locks_.lock(id);
    auto r = load_record(options_.data_dir, id);
    if (!r || r->info.status != sandbox_status::running)
      return; // paused, removed or stopped meanwhile: nothing of it runs
    auto st = runtime_status(id);
    if (!st || *st == "stopped") {
      refresh_status(*r); // its processes ended on their own: stopped, not an agent's failure
      return;
    }
    // Nothing hostile keeps running: the container's processes end (status stopped).
    cli_.run({"kill", cid(id), "KILL"});
    orphan_reaper::poke();
  }
  failure_listener l;
  {
    std::lock_guard g(failures_mu_);
    l = listener_;
  }
  if (l)
    l(id, reason);
}

} // namespace sandboxd::runtime
