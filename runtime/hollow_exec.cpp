// The hollow driver's exec: the few programs it plays (hollow_driver.hpp), with the
// sandbox's environment, stdin pulled as a real driver pulls it, the output cap, the
// timeout and signal_exec.
#include "runtime/hollow_driver.hpp"

#include "runtime/lifecycle_rules.hpp"
#include "runtime/sandbox_record.hpp"

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <memory>

namespace sandboxd::runtime {
namespace {

// What signal_exec delivers to a running `sleep`.
struct signal_box {
  std::mutex mu;
  std::condition_variable cv;
  int signal = 0;
};

struct output_sink {
  const exec_request& req;
  exec_result& res;
  std::uint64_t cap;
  void operator()(output_stream s, std::string_view data) {
    std::string& to = s == output_stream::out ? res.stdout_data : res.stderr_data;
    std::uint64_t room = cap > to.size() ? cap - to.size() : 0;
    if (data.size() > room) {
      res.output_truncated = true;
      data = data.substr(0, room);
    }
    to.append(data);
    if (req.on_output && !data.empty())
      req.on_output(s, data);
  }
};

// `sleep SECONDS`: ends at its time (exit 0), at a signal (that signal), or at the exec's
// timeout (SIGKILL, timed out).
void play_sleep(const exec_request& req, signal_box& box, exec_result& res) {
  const double seconds = req.argv.size() > 1 ? std::atof(req.argv[1].c_str()) : 0;
  auto wait =
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
  const bool times_out = req.timeout.count() > 0 && req.timeout < wait;
  std::unique_lock<std::mutex> l(box.mu);
  if (box.cv.wait_for(l, times_out ? req.timeout : wait, [&] { return box.signal != 0; })) {
    res.signal = box.signal;
  } else if (times_out) {
    res.timed_out = true;
    res.signal = SIGKILL;
  } else {
    res.exit_code = 0;
  }
}

} // namespace

std::vector<std::pair<std::string, std::string>>
hollow_driver::env_of(const std::string& id) const {
  if (surely_no_dir(id))
    return {};
  auto r = load_record(options_.data_dir, id);
  return r ? r->env : std::vector<std::pair<std::string, std::string>>{};
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
  if (req.stdin_data && req.stdin_source)
    return make_error(errc::invalid_argument,
                      "exec takes stdin_data or stdin_source, not both; drop one");
  auto box = std::make_shared<signal_box>();
  auto entry = execs_.add(id, req.exec_id, [box](int sig) -> outcome<void> {
    std::lock_guard<std::mutex> g(box->mu);
    box->signal = sig;
    box->cv.notify_all();
    return {};
  });
  if (!entry)
    return entry.err();
  const auto began = std::chrono::steady_clock::now();
  exec_result res;
  output_sink out{req, res,
                  req.max_output_bytes ? req.max_output_bytes : r->limits.max_output_bytes};
  const std::string& prog = req.argv[0];
  if (prog == "echo") {
    std::string line;
    for (size_t i = 1; i < req.argv.size(); ++i)
      line += (i > 1 ? " " : "") + req.argv[i];
    out(output_stream::out, line + "\n");
    res.exit_code = 0;
  } else if (prog == "cat" && req.argv.size() == 1) {
    if (req.stdin_source)
      for (std::string chunk; req.stdin_source(chunk); chunk.clear())
        out(output_stream::out, chunk);
    else
      out(output_stream::out, req.stdin_data.value_or(""));
    res.exit_code = 0;
  } else if (prog == "env" && req.argv.size() == 1) {
    auto env = env_of(id);
    for (const auto& [k, v] : req.env) {
      std::erase_if(env, [&](const auto& e) { return e.first == k; });
      env.emplace_back(k, v);
    }
    for (const auto& [k, v] : env)
      out(output_stream::out, k + "=" + v + "\n");
    res.exit_code = 0;
  } else if (prog == "sleep") {
    play_sleep(req, *box, res);
  } else if (prog == "true") {
    res.exit_code = 0;
  } else if (prog == "false") {
    res.exit_code = 1;
  } else {
    out(output_stream::err, prog + ": the hollow driver runs no programs\n");
    res.exit_code = 127;
  }
  res.duration =
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  return res;
}

outcome<void> hollow_driver::signal_exec(const std::string& id, const std::string& exec_id,
                                         int signal) {
  wait_latency();
  if (auto r = find(id); !r)
    return r.err();
  return execs_.signal(id, exec_id, signal);
}

} // namespace sandboxd::runtime
