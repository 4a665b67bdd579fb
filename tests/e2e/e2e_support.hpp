// e2e_support — sandboxctl against a real sandboxd, both as separate processes: the daemon
// started on a data directory that a guardian cleans whatever happens (node_dir), ready
// once its socket and development token exist, stopped with SIGTERM (or killed with SIGKILL,
// and started again on the same data directory); sandboxctl run with
// given arguments, environment and stdin bytes, its stdout, stderr, exit code and wall time
// captured apart.
//
// Every --json output is checked against its documented shape (cli/json_shapes.hpp).
// Precondition for Boost.Test: crun can run sandboxes here.
#pragma once

#include "cli/json_shapes.hpp"
#include "node/runtime_set.hpp"
#include "tests/node/node_fixture.hpp"
#include "tests/support/process.hpp"

#include <nlohmann/json.hpp>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <fcntl.h>
#include <map>
#include <poll.h>
#include <sys/wait.h>

namespace sandboxd::test {

// The programs under test: this build's sandboxd and sandboxctl (build_tree.hpp).
inline const std::string& sandboxd_bin() {
  static const std::string p = built_program("apps/sandboxd");
  return p;
}
inline const std::string& sandboxctl_bin() {
  static const std::string p = built_program("apps/sandboxctl");
  return p;
}

namespace utf = boost::unit_test;
using nlohmann::json;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One sandboxd with `flags` on its own data directory (DIR/data), output in DIR/sandboxd.log.
class daemon_process {
public:
  explicit daemon_process(std::vector<std::string> flags) : flags_(std::move(flags)) { launch(); }

  // After stop() or kill9(): the daemon again, on the same data directory and flags (its
  // output in DIR/sandboxd-N.log for the Nth start).
  void restart() {
    if (!exited_)
      throw std::runtime_error("restart of a sandboxd that still runs");
    launch();
  }

  // SIGKILL, and the daemon reaped: what a crash leaves.
  void kill9() {
    if (pid_ <= 0 || exited_)
      return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
    exited_ = true;
  }

  pid_t pid() const { return pid_; }

  ~daemon_process() { stop(); }
  daemon_process(const daemon_process&) = delete;
  daemon_process& operator=(const daemon_process&) = delete;

  // SIGTERM, then the exit status (SIGKILL after 60 s).
  int stop() {
    if (pid_ <= 0 || exited_)
      return status_;
    ::kill(pid_, SIGTERM);
    if (!eventually([&] { return ended(); }, 60s)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      exited_ = true;
    }
    return status_;
  }

  const std::string& token() const { return token_; }
  std::string address() const { return "unix:" + socket_path(); }
  std::string socket_path() const { return dir_.data() + "/sandboxd.sock"; }
  const node_dir& dir() const { return dir_; }
  std::string data() const { return dir_.data(); }
  std::string log_path() const {
    return dir_.path() +
           (starts_ <= 1 ? "/sandboxd.log" : "/sandboxd-" + std::to_string(starts_) + ".log");
  }
  std::string log() const { return read_text(log_path()); }
  // The embedded PostgreSQL's read models, as its superuser (over its private socket).
  std::string pg_conninfo() const {
    return "host=" + dir_.data() + "/postgres/sock port=5432 user=postgres dbname=sandboxd";
  }

private:
  void launch() {
    ++starts_;
    exited_ = false;
    status_ = 0;
    std::vector<std::string> args{sandboxd_bin(), "--data-dir", dir_.data()};
    args.insert(args.end(), flags_.begin(), flags_.end());
    pid_ = spawn_logged(args, log_path(), false, dir_.path());
    const bool ready = eventually(
      [&] {
        return ended() || (std::filesystem::exists(socket_path()) &&
                           std::filesystem::exists(dir_.data() + "/dev-token") &&
                           log().find("sandboxd ready") != std::string::npos);
      },
      180s);
    if (!ready || ended())
      throw std::runtime_error("sandboxd did not become ready:\n" + log());
    token_ = read_text(dir_.data() + "/dev-token");
    while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' '))
      token_.pop_back();
  }

  bool ended() {
    if (!exited_ && ::waitpid(pid_, &status_, WNOHANG) == pid_)
      exited_ = true;
    return exited_;
  }

  std::vector<std::string> flags_;
  node_dir dir_;
  int starts_ = 0;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string token_;
};

struct ctl_result {
  int exit_code = -1; // 128 + N when signal N ended it
  std::string out;
  std::string err;
  double seconds = 0;

  json doc() const { return json::parse(out); }
  // JSON lines.
  std::vector<json> lines() const {
    std::vector<json> v;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);)
      if (!l.empty())
        v.push_back(json::parse(l));
    return v;
  }
};

inline std::ostream& operator<<(std::ostream& o, const ctl_result& r) {
  return o << "exit " << r.exit_code << ", stdout [" << r.out.substr(0, 2000) << "], stderr ["
           << r.err.substr(0, 2000) << "]";
}

struct ctl_options {
  std::string stdin_bytes;
  std::map<std::string, std::string> env; // added to (or replacing) the inherited ones
  std::string cwd;                        // "": this process's
};

// Runs `program args...` and waits for it; stdin, stdout and stderr are pipes.
inline ctl_result run_process(const std::string& program, const std::vector<std::string>& args,
                              const ctl_options& o = {}) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC))
    throw std::runtime_error("pipe2 failed");
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (const auto& [k, v] : o.env)
      ::setenv(k.c_str(), v.c_str(), 1);
    if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0)
      ::_exit(126);
    std::vector<std::string> all{program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::signal(SIGPIPE, SIG_IGN);
  ctl_result r;
  std::size_t written = 0;
  int to_child = in[1];
  if (o.stdin_bytes.empty()) {
    ::close(to_child);
    to_child = -1;
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    std::vector<pollfd> fds;
    if (out_open)
      fds.push_back({out[0], POLLIN, 0});
    if (err_open)
      fds.push_back({err[0], POLLIN, 0});
    if (to_child >= 0)
      fds.push_back({to_child, POLLOUT, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      break;
    for (const auto& p : fds) {
      if (!p.revents)
        continue;
      if (p.fd == to_child) {
        const ssize_t n =
          ::write(to_child, o.stdin_bytes.data() + written, o.stdin_bytes.size() - written);
        if (n > 0)
          written += static_cast<std::size_t>(n);
        if (n < 0 || written == o.stdin_bytes.size()) {
          ::close(to_child);
          to_child = -1;
        }
        continue;
      }
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n <= 0) {
        (p.fd == out[0] ? out_open : err_open) = false;
        continue;
      }
      (p.fd == out[0] ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
    }
  }
  if (to_child >= 0)
    ::close(to_child);
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// The command path of sandboxctl `args` as cli/json_shapes names it ("audit verify",
// "exec --background"), skipping the global flags; "" when there is none.
inline std::string command_path_of(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  bool background = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--")
      break;
    if (a == "--addr" || a == "--token" || a == "--token-file" || a == "--tls-ca") {
      ++i;
      continue;
    }
    if (a == "-d" || a == "--background")
      background = true;
    if (!a.empty() && a[0] != '-')
      words.push_back(a);
  }
  if (words.empty())
    return "";
  if (words.size() > 1 && cli::json_output_of(words[0] + " " + words[1]) != nullptr)
    return words[0] + " " + words[1];
  if (words[0] == "exec" && background)
    return "exec --background";
  return words[0];
}

// With --json, everything sandboxctl prints on stdout is documented (docs/cli.md, "JSON
// output"): each document (or JSON line) has exactly the fields of its command's shape, of
// their types; an error prints the error document.
inline void expect_documented_json(const std::vector<std::string>& args, const ctl_result& r) {
  if (std::find(args.begin(), args.end(), "--json") == args.end() || r.out.empty())
    return;
  if (auto dashes = std::find(args.begin(), args.end(), "--");
      std::find(args.begin(), dashes, "--json") == dashes)
    return; // the --json belongs to the command run in the sandbox
  const std::string path = command_path_of(args);
  const auto* output = cli::json_output_of(path);
  const bool failed = r.exit_code != 0 && r.out.rfind("{\"error\"", 0) == 0;
  BOOST_TEST_REQUIRE((failed || output != nullptr),
                     "sandboxctl " << path << " --json: no documented shape");
  const std::string shape = failed ? "error_document" : output->shape;
  std::vector<json> docs;
  if (!failed && output->lines) {
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);)
      if (!l.empty())
        docs.push_back(json::parse(l));
  } else {
    docs.push_back(json::parse(r.out));
  }
  for (const auto& doc : docs) {
    const auto problems = cli::shape_problems(doc, shape);
    std::string all;
    for (const auto& p : problems)
      all += "\n  " + p;
    BOOST_TEST(problems.empty(), "sandboxctl " << path << " --json differs from its documented "
                                               << shape << ":" << all);
  }
}

// sandboxctl connected to `d` through SANDBOXD_ADDR and SANDBOXD_TOKEN.
inline ctl_result ctl(const daemon_process& d, const std::vector<std::string>& args,
                      ctl_options o = {}) {
  o.env.emplace("SANDBOXD_ADDR", d.address());
  o.env.emplace("SANDBOXD_TOKEN", d.token());
  auto r = run_process(sandboxctl_bin(), args, o);
  expect_documented_json(args, r);
  return r;
}

// `sandboxctl args` must exit 0: its stdout.
inline std::string ctl_ok(const daemon_process& d, const std::vector<std::string>& args,
                          ctl_options o = {}) {
  auto r = ctl(d, args, std::move(o));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "sandboxctl " << args.front() << ": " << r);
  return r.out;
}

// `create` with `flags`: the new id (create prints only it).
inline std::string create(const daemon_process& d, std::vector<std::string> flags) {
  flags.insert(flags.begin(), "create");
  auto out = ctl_ok(d, flags);
  BOOST_REQUIRE_MESSAGE(out.size() > 1 && out.back() == '\n' && out.find('\n') == out.size() - 1,
                        "create printed more than an id: " << out);
  return out.substr(0, out.size() - 1);
}

inline boost::test_tools::assertion_result crun_can_run(utf::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (::geteuid() != 0) {
    r = false;
    r.message() << "real sandboxes need root";
  } else if (auto why = node::runtime_unavailable(events::runtime_kind::crun)) {
    r = false;
    r.message() << "crun cannot run sandboxes here: " << *why;
  }
  return r;
}

} // namespace sandboxd::test
