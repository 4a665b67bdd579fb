// cli_bench — what a script pays for one `sandboxctl get`, against a running sandboxd (a
// process of its own: hollow runtime, embedded file log and PostgreSQL, unix socket):
//   get_p50_ms              the sandboxctl binary, a process per call: exec, dynamic loading,
//                           connect, authenticate, Session.get, print, exit (target < 20 ms);
//   rpc_get_p50_ms          the same Session.get from the C++ client in-process, connected;
//   rpc_connect_get_p50_ms  connect, authenticate and get in-process: sandboxctl's own work
//                           without a process;
//   exec_true_p50_ms        the reference for the process part: fork and exec of /bin/true.
// The four are measured interleaved, call by call, in one run. p90 figures follow each p50.
// Usage: cli_bench [--json] [--calls N]
#include "api/client.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;
using namespace sandboxd;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double ms_since(steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(steady::now() - t0).count();
}

// Runs argv with stdout and stderr on /dev/null; its exit status.
int run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    for (const auto& e : env)
      ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> a;
    for (const auto& s : argv)
      a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// sandboxd on a private data directory until destroyed (SIGTERM); a guardian kills it and
// removes the directory if this process dies first.
class daemon_process {
public:
  daemon_process() : dir_("cli-bench") {
    ::chmod(dir_.path().c_str(), 0711); // the embedded PostgreSQL's user traverses it
    data_ = dir_.path() + "/data";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int log = ::open((dir_.path() + "/sandboxd.log").c_str(), O_WRONLY | O_CREAT, 0644);
      ::dup2(log, 1);
      ::dup2(log, 2);
      ::execl(SANDBOXD_BIN, SANDBOXD_BIN, "--data-dir", data_.c_str(), "--runtime", "hollow",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    guardian_ = std::make_unique<test::guardian>(
      "kill -9 " + std::to_string(pid_) + " 2>/dev/null; rm -rf " + test::shell_quote(dir_.path()));
    const auto until = steady::now() + std::chrono::minutes(3);
    while (read_text(dir_.path() + "/sandboxd.log").find("sandboxd ready") == std::string::npos) {
      if (steady::now() > until || ::waitpid(pid_, nullptr, WNOHANG) == pid_)
        throw std::runtime_error("sandboxd did not start:\n" +
                                 read_text(dir_.path() + "/sandboxd.log"));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    token_ = read_text(data_ + "/dev-token");
    while (!token_.empty() && token_.back() == '\n')
      token_.pop_back();
  }
  ~daemon_process() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    guardian_.reset();
  }

  std::string address() const { return "unix:" + data_ + "/sandboxd.sock"; }
  const std::string& token() const { return token_; }

private:
  test::temp_dir dir_;
  std::string data_, token_;
  pid_t pid_ = -1;
  std::unique_ptr<test::guardian> guardian_;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  int calls = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--calls" && i + 1 < argc)
      calls = std::max(10, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: cli_bench [--json] [--calls N]\n");
      return 2;
    }
  }

  daemon_process d;
  auto c = api::client::connect({d.address(), d.token()});
  if (!c) {
    std::fprintf(stderr, "cli_bench: %s\n", c.err().message.c_str());
    return 1;
  }
  auto sb = c->create({});
  if (!sb) {
    std::fprintf(stderr, "cli_bench: create: %s\n", sb.err().message.c_str());
    return 1;
  }
  const std::string id = sb->id;
  const std::vector<std::string> env{"SANDBOXD_ADDR=" + d.address(), "SANDBOXD_TOKEN=" + d.token()};
  const std::vector<std::string> ctl{SANDBOXCTL_BIN, "get", id};
  // Warm the page cache and the daemon's actor.
  for (int i = 0; i < 5; ++i)
    if (run(ctl, env) != 0) {
      std::fprintf(stderr, "cli_bench: sandboxctl get %s failed\n", id.c_str());
      return 1;
    }

  std::vector<double> cli, rpc, connect_get, proc;
  for (int i = 0; i < calls; ++i) {
    auto t0 = steady::now();
    if (run(ctl, env) != 0)
      return 1;
    cli.push_back(ms_since(t0));

    t0 = steady::now();
    if (!c->get(id))
      return 1;
    rpc.push_back(ms_since(t0));

    t0 = steady::now();
    {
      auto fresh = api::client::connect({d.address(), d.token()});
      if (!fresh || !fresh->get(id))
        return 1;
    }
    connect_get.push_back(ms_since(t0));

    t0 = steady::now();
    run({"/bin/true"});
    proc.push_back(ms_since(t0));
  }

  const double get_p50 = percentile(cli, 0.5), get_p90 = percentile(cli, 0.9);
  const double rpc_p50 = percentile(rpc, 0.5), rpc_p90 = percentile(rpc, 0.9);
  const double cg_p50 = percentile(connect_get, 0.5), cg_p90 = percentile(connect_get, 0.9);
  const double true_p50 = percentile(proc, 0.5), true_p90 = percentile(proc, 0.9);
  std::printf("cli_bench: `sandboxctl get` against a running sandboxd (hollow runtime, unix "
              "socket), %d calls of each, interleaved\n",
              calls);
  std::printf("  get_p50_ms              %6.2f  (p90 %6.2f)  the binary, a process per call "
              "(target < 20)\n",
              get_p50, get_p90);
  std::printf("  rpc_get_p50_ms          %6.2f  (p90 %6.2f)  the same get, C++ client "
              "in-process, connected\n",
              rpc_p50, rpc_p90);
  std::printf("  rpc_connect_get_p50_ms  %6.2f  (p90 %6.2f)  connect + authenticate + get "
              "in-process\n",
              cg_p50, cg_p90);
  std::printf("  exec_true_p50_ms        %6.2f  (p90 %6.2f)  reference: fork + exec of "
              "/bin/true\n",
              true_p50, true_p90);
  if (json)
    std::printf("{\"get_p50_ms\":%.3f,\"get_p90_ms\":%.3f,\"rpc_get_p50_ms\":%.3f,"
                "\"rpc_get_p90_ms\":%.3f,\"rpc_connect_get_p50_ms\":%.3f,"
                "\"exec_true_p50_ms\":%.3f,\"calls\":%d}\n",
                get_p50, get_p90, rpc_p50, rpc_p90, cg_p50, true_p50, calls);
  return 0;
}
