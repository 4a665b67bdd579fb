// sandboxd, the daemon, as a process: its flags and config file, its start on embedded
// defaults (the development token, JSON logs, the metrics endpoint), SIGTERM and SIGINT
// (exit 0, nothing left running: no PostgreSQL, no sandbox process, no mount; sandboxes
// recovered at the next start), and its refusals (exit 1 with a message that says what).
#define BOOST_TEST_MODULE sandboxd_daemon
#include <boost/test/unit_test.hpp>

#include "node/daemon_settings.hpp"
#include "node/node.hpp"
#include "node/runtime_set.hpp"
#include "tests/node/node_fixture.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/process.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>

using namespace sandboxd::test;
namespace utf = boost::unit_test;
namespace cmd = sandboxd::actors::cmd;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One sandboxd process, its stdout and stderr in `out`.
class daemon_process {
public:
  daemon_process(std::vector<std::string> args, std::string out) : out_(std::move(out)) {
    args.insert(args.begin(), built_program("apps/sandboxd"));
    pid_ = spawn_logged(args, out_);
  }
  ~daemon_process() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::string output() const { return read_all(out_); }
  bool wait_for_output(const std::string& text, std::chrono::milliseconds limit = 180s) {
    return eventually([&] { return output().find(text) != std::string::npos || ended(); }, limit) &&
           output().find(text) != std::string::npos;
  }
  // The exit status once it ended (within `limit`), else nullopt.
  std::optional<int> wait(std::chrono::milliseconds limit = 120s) {
    eventually([&] { return ended(); }, limit);
    if (!exited_)
      return std::nullopt;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  void signal(int s) { ::kill(pid_, s); }

private:
  bool ended() {
    if (!exited_ && ::waitpid(pid_, &status_, WNOHANG) == pid_)
      exited_ = true;
    return exited_;
  }

  std::string out_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

// Runs sandboxd to its end; returns its exit status and output.
std::pair<int, std::string> run_sandboxd(const std::vector<std::string>& args,
                                         const std::string& out) {
  daemon_process d(args, out);
  auto rc = d.wait();
  BOOST_REQUIRE_MESSAGE(rc, "sandboxd did not exit: " << d.output());
  return {*rc, d.output()};
}

std::string http_get(int port, const std::string& path) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (::write(s, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = ::read(s, buf, sizeof buf)) > 0)
        response.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(s);
  return response;
}

boost::test_tools::assertion_result as_root(utf::test_unit_id) {
  boost::test_tools::assertion_result r(::geteuid() == 0);
  r.message() << "needs root (another user's directory, real sandboxes)";
  return r;
}

boost::test_tools::assertion_result crun_can_run(utf::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (::geteuid() != 0) {
    r = false;
    r.message() << "real sandboxes need root";
  } else if (auto why = nd::runtime_unavailable(ev::runtime_kind::crun)) {
    r = false;
    r.message() << "crun cannot run sandboxes here: " << *why;
  }
  return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(version_and_help_exit_0) {
  node_dir dir;
  auto [rc, out] = run_sandboxd({"--version"}, dir.path() + "/out");
  BOOST_TEST(rc == 0);
  BOOST_TEST(out == "sandboxd 0.1.0\n");
  std::tie(rc, out) = run_sandboxd({"--help"}, dir.path() + "/out");
  BOOST_TEST(rc == 0);
  for (const char* flag :
       {"--data-dir", "--config", "--event-log", "--kafka-brokers", "--postgres", "--runtime",
        "--default-runtime", "--listen", "--metrics-addr", "--log-format", "--tokens-file"})
    BOOST_TEST(out.find(flag) != std::string::npos, "--help does not mention " << flag);
}

BOOST_AUTO_TEST_CASE(bad_flags_and_config_files_exit_2_naming_the_problem) {
  node_dir dir;
  auto [rc, out] =
    run_sandboxd({"--event-log", "s3", "--data-dir", dir.data()}, dir.path() + "/out");
  BOOST_TEST(rc == 2);
  BOOST_TEST(out.find("\"s3\"") != std::string::npos);
  std::tie(rc, out) = run_sandboxd({"--no-such-flag"}, dir.path() + "/out");
  BOOST_TEST(rc == 2);
  std::ofstream(dir.path() + "/bad.toml") << "[postgres]\nconnifo = \"host=x\"\n";
  std::tie(rc, out) = run_sandboxd({"--config", dir.path() + "/bad.toml"}, dir.path() + "/out");
  BOOST_TEST(rc == 2);
  BOOST_TEST(out.find("connifo") != std::string::npos);
  BOOST_TEST(!std::filesystem::exists(dir.data()), "a refused config made the data directory");
}

BOOST_AUTO_TEST_CASE(flags_win_over_the_config_file) {
  node_dir dir;
  const std::string file = dir.path() + "/sandboxd.toml";
  std::ofstream(file) << "data_dir = \"/from/file\"\nmetrics_addr = \"127.0.0.1:9999\"\n"
                         "[log]\nformat = \"json\"\n[runtimes]\nenabled = [\"crun\"]\n";
  auto [rc, out] = run_sandboxd(
    {"--config", file, "--data-dir", "/from/flag", "--runtime", "hollow,crun", "--print-config"},
    dir.path() + "/out");
  BOOST_REQUIRE_EQUAL(rc, 0);
  nd::daemon_settings printed;
  BOOST_REQUIRE(!nd::apply_config(printed, out, "printed"));
  BOOST_TEST(printed.data_dir == "/from/flag");
  BOOST_TEST((printed.runtimes == std::vector<std::string>{"hollow", "crun"}));
  BOOST_TEST(printed.metrics_addr == "127.0.0.1:9999");
  BOOST_TEST(printed.log_format == "json");
  BOOST_TEST(printed.event_log == "file");
}

// With no runtime flag sandboxd takes runsc, or crun with a warning where runsc cannot run.
BOOST_AUTO_TEST_CASE(starts_on_embedded_defaults_and_stops_clean_on_sigterm,
                     *utf::precondition(as_root) * utf::precondition(postgres_installed)) {
  node_dir dir;
  const int port = free_port();
  daemon_process d({"--data-dir", dir.data(), "--metrics-addr", "127.0.0.1:" + std::to_string(port),
                    "--log-format", "json"},
                   dir.path() + "/out");
  BOOST_REQUIRE_MESSAGE(d.wait_for_output("sandboxd ready"), d.output());
  // The development token: private, and its path in the log.
  const std::string token = dir.data() + "/dev-token";
  struct stat st {};
  BOOST_REQUIRE_EQUAL(::stat(token.c_str(), &st), 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_TEST(d.output().find(token) != std::string::npos);
  // The default runtime.
  const bool runsc = !nd::runtime_unavailable(ev::runtime_kind::runsc);
  const bool crun = !nd::runtime_unavailable(ev::runtime_kind::crun);
  if (runsc && crun)
    BOOST_TEST(d.output().find("runtimes: runsc, crun (default runsc)") != std::string::npos);
  else if (runsc)
    BOOST_TEST(d.output().find("runtimes: runsc (default runsc)") != std::string::npos);
  else
    BOOST_TEST(d.output().find("using crun") != std::string::npos);
  // Metrics answer.
  const auto metrics = http_get(port, "/metrics");
  BOOST_TEST(metrics.find("200 OK") != std::string::npos);
  BOOST_TEST(metrics.find("sandboxd_events_appended_total") != std::string::npos);
  BOOST_TEST(metrics.find("sandboxd_projection_lag_records{partition=\"7\"} 0") !=
             std::string::npos);
  BOOST_TEST(!processes_under(dir.data() + "/postgres").empty(), "no embedded PostgreSQL runs");

  d.signal(SIGTERM);
  const auto rc = d.wait();
  BOOST_REQUIRE(rc);
  BOOST_TEST(*rc == 0);
  const std::string out = d.output();
  BOOST_TEST(out.find("sandboxd stopped") != std::string::npos);
  // Every line is one JSON object.
  std::istringstream lines(out);
  std::string line;
  std::size_t n = 0;
  while (std::getline(lines, line)) {
    ++n;
    BOOST_TEST(nlohmann::json::accept(line), "not JSON: " << line);
  }
  BOOST_TEST(n > 5u);
  for (int pid : processes_under(dir.data()))
    BOOST_ERROR("process " << pid << " left: " << process_line(pid));
  BOOST_TEST(mounts_under(dir.data()).empty());
}

// A data directory below a directory closed to others (mktemp -d, /root): the embedded
// PostgreSQL's user cannot reach it by its path, so the server works through the data
// directory's entry under /run/sandboxd, which is gone again after the stop.
BOOST_AUTO_TEST_CASE(a_data_directory_below_a_closed_directory_starts_and_stops_clean,
                     *utf::precondition(as_root) * utf::precondition(postgres_installed)) {
  node_dir dir;
  const std::string closed = dir.path() + "/closed";
  BOOST_REQUIRE_EQUAL(::mkdir(closed.c_str(), 0700), 0);
  const std::string data = closed + "/var";
  daemon_process d({"--data-dir", data}, dir.path() + "/out");
  BOOST_REQUIRE_MESSAGE(d.wait_for_output("sandboxd ready"), d.output());
  const std::string out = d.output();
  const auto at = out.find("works through /run/sandboxd/");
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, out);
  const auto from = at + std::string("works through ").size();
  const std::string entry = out.substr(from, out.find_first_of(" \n\"", from) - from);
  BOOST_TEST(!processes_under(entry + "/postgres").empty(), "no PostgreSQL runs in " << entry);
  d.signal(SIGTERM);
  const auto rc = d.wait();
  BOOST_REQUIRE(rc);
  BOOST_TEST(*rc == 0, d.output());
  std::ifstream info("/proc/self/mountinfo");
  std::string line;
  while (std::getline(info, line))
    BOOST_TEST(line.find(" " + data) == std::string::npos,
               "a mount of the data directory is left: " << line);
  BOOST_TEST(processes_under(entry).empty());
}

// A running sandbox outlives a daemon's stop on disk, not as processes: SIGINT stops it (no
// process, no mount left), the next start runs it again.
BOOST_AUTO_TEST_CASE(sandboxes_persist_across_a_daemon_stop,
                     *utf::precondition(crun_can_run) * utf::precondition(postgres_installed)) {
  node_dir dir;
  const auto crun = ev::runtime_kind::crun;
  auto cfg = node_config_for(dir, {crun}, true);
  cfg.log = nd::log_kind::file;
  std::string id;
  {
    nd::node n(cfg);
    n.start();
    auto r = n.call("", create_command(crun));
    BOOST_REQUIRE(r.ok());
    id = r.state.sandbox_id;
    BOOST_REQUIRE(n.driver(crun)->write_file(id, "/workspace/kept", "yes", 0644).ok());
    n.stop();
  }
  daemon_process d({"--data-dir", dir.data(), "--runtime", "crun", "--partitions", "4"},
                   dir.path() + "/out");
  BOOST_REQUIRE_MESSAGE(d.wait_for_output("sandboxd ready"), d.output());
  BOOST_TEST(d.output().find("1 sandboxes quiesced at the last stop run again") !=
             std::string::npos);
  BOOST_TEST(!sandbox_processes(id).empty(), "the sandbox does not run under the daemon");
  const auto mounts = mounts_under(dir.data());
  BOOST_TEST(std::any_of(mounts.begin(), mounts.end(), [&](const std::string& m) {
    return m.find("/sandboxes/" + id + "/") != std::string::npos;
  }));
  d.signal(SIGINT);
  const auto rc = d.wait();
  BOOST_REQUIRE(rc);
  BOOST_TEST(*rc == 0);
  BOOST_TEST(d.output().find("running sandboxes stopped until the next start") !=
             std::string::npos);
  for (int pid : processes_under(dir.data()))
    BOOST_ERROR("process " << pid << " left: " << process_line(pid));
  for (const auto& m : mounts_under(dir.data()))
    BOOST_ERROR("mount left: " << m);

  nd::node n(cfg);
  n.start();
  BOOST_TEST(n.get(id, "t1").state.status == ac::sandbox_status::running);
  BOOST_TEST(n.driver(crun)->inspect(id)->status == rt::sandbox_status::running);
  BOOST_TEST(n.driver(crun)->read_file(id, "/workspace/kept").value() == "yes");
  BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
  n.stop();
}

BOOST_AUTO_TEST_CASE(a_data_directory_of_another_user_is_refused,
                     *utf::precondition(as_root) * utf::precondition(postgres_installed)) {
  node_dir dir;
  ::mkdir(dir.data().c_str(), 0700);
  const passwd* nobody = ::getpwnam("nobody");
  BOOST_REQUIRE(nobody);
  BOOST_REQUIRE_EQUAL(::chown(dir.data().c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  auto [rc, out] =
    run_sandboxd({"--data-dir", dir.data(), "--runtime", "hollow"}, dir.path() + "/out");
  BOOST_TEST(rc == 1);
  BOOST_TEST(out.find("owned by nobody") != std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(an_unreachable_postgres_is_refused) {
  node_dir dir;
  auto [rc, out] = run_sandboxd({"--data-dir", dir.data(), "--runtime", "hollow", "--postgres",
                                 "host=" + dir.path() + "/none user=postgres dbname=x"},
                                dir.path() + "/out");
  BOOST_TEST(rc == 1);
  BOOST_TEST(out.find("sandboxd cannot start: PostgreSQL: PostgreSQL at") != std::string::npos,
             out);
  BOOST_TEST(out.find("unreachable") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_metrics_address_in_use_is_refused, *utf::precondition(postgres_installed)) {
  node_dir dir;
  const int port = free_port();
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE_EQUAL(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  BOOST_REQUIRE_EQUAL(::listen(s, 1), 0);
  auto [rc, out] = run_sandboxd({"--data-dir", dir.data(), "--runtime", "hollow", "--postgres",
                                 pg_server::shared().conninfo(), "--metrics-addr",
                                 "127.0.0.1:" + std::to_string(port)},
                                dir.path() + "/out");
  ::close(s);
  BOOST_TEST(rc == 1);
  BOOST_TEST(out.find("metrics endpoint") != std::string::npos, out);
  BOOST_TEST(out.find("node stopped") != std::string::npos);
}
