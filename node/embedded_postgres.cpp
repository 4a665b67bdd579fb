#include "node/embedded_postgres.hpp"

#include "node/start_error.hpp"

#include <libpq-fe.h>
#include <pqxx/pqxx>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <pwd.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;

namespace sandboxd::node {
namespace {

using namespace std::chrono_literals;

std::string errno_text() {
  return std::strerror(errno);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
    s.pop_back();
  return s;
}

// A conninfo value in single quotes, with ' and \ escaped (libpq's rules).
std::string conninfo_value(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "'";
}

// Who a child process becomes, worked out before fork() (getpwnam and getgrouplist are
// not async-signal-safe).
struct identity {
  bool change = false; // only when sandboxd is root
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

identity identity_of(const std::string& user, uid_t uid, gid_t gid) {
  identity id;
  id.change = ::geteuid() == 0 && uid != 0;
  id.uid = uid;
  id.gid = gid;
  if (id.change) {
    int n = 32;
    id.groups.resize(static_cast<std::size_t>(n));
    if (::getgrouplist(user.c_str(), gid, id.groups.data(), &n) < 0) {
      id.groups.resize(static_cast<std::size_t>(n));
      ::getgrouplist(user.c_str(), gid, id.groups.data(), &n);
    }
    id.groups.resize(static_cast<std::size_t>(n));
  }
  return id;
}

// The environment of PostgreSQL's processes: ours without PG* variables (PGDATA, PGPORT
// and friends would override what the node chose) and with HOME pointing at the cluster.
struct child_env {
  std::vector<std::string> strings;
  std::vector<char*> pointers;
};

child_env make_env(const std::string& home) {
  child_env e;
  for (char** p = environ; *p; ++p) {
    std::string_view v(*p);
    if (v.rfind("PG", 0) == 0 || v.rfind("HOME=", 0) == 0)
      continue;
    e.strings.emplace_back(v);
  }
  e.strings.push_back("HOME=" + home);
  for (auto& s : e.strings)
    e.pointers.push_back(s.data());
  e.pointers.push_back(nullptr);
  return e;
}

std::vector<char*> pointers_of(std::vector<std::string>& argv) {
  std::vector<char*> p;
  for (auto& a : argv)
    p.push_back(a.data());
  p.push_back(nullptr);
  return p;
}

// In a freshly forked child: default signal dispositions, nothing blocked, stdio on
// /dev/null and `out_fd`, no other descriptor, then `who`. Only async-signal-safe calls.
// Returns false when a step failed (the caller _exits).
bool become(const identity& who, int out_fd) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; ++s)
    ::signal(s, SIG_DFL);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0)
    return false;
  ::close_range(3, ~0U, 0);
  if (who.change) {
    if (::setgroups(who.groups.size(), who.groups.data()) != 0 || ::setgid(who.gid) != 0 ||
        ::setuid(who.uid) != 0)
      return false;
  }
  return true;
}

// Runs `argv` as `who` with stdout and stderr appended to `log_path`; returns its wait
// status. A fault (fork failed) throws.
int run_as(const identity& who, std::vector<std::string> argv, const std::string& log_path,
           const child_env& env) {
  auto args = pointers_of(argv);
  const int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out < 0)
    throw start_error("cannot open " + log_path + ": " + errno_text());
  if (who.change && ::fchown(out, who.uid, who.gid) != 0) {
    ::close(out);
    throw start_error("cannot hand " + log_path + " to the PostgreSQL user: " + errno_text());
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    throw start_error(std::string("cannot fork to run ") + argv[0] + ": " + errno_text());
  }
  if (pid == 0) {
    if (become(who, out))
      ::execve(args[0], args.data(), env.pointers.data());
    ::_exit(127);
  }
  ::close(out);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool exited_ok(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Waits up to `d` for a process that is not our child to be gone.
bool wait_gone(pid_t pid, std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

} // namespace

std::pair<std::string, gid_t> embedded_postgres::server_identity() {
  if (::geteuid() != 0) {
    const passwd* pw = ::getpwuid(::geteuid());
    return {pw ? pw->pw_name : std::to_string(::geteuid()), ::getegid()};
  }
  const passwd* pw = ::getpwnam("postgres");
  if (!pw)
    throw start_error("sandboxd runs as root, so its embedded PostgreSQL must run as the "
                      "`postgres` user, and there is none; install postgresql-15 (it makes "
                      "the user) or give --postgres with an existing server");
  return {pw->pw_name, pw->pw_gid};
}

embedded_postgres::embedded_postgres(embedded_postgres_options options)
    : options_(std::move(options)) {
  auto [user, gid] = server_identity();
  user_ = user;
  gid_ = gid;
  uid_ = ::geteuid();
  if (::geteuid() == 0)
    uid_ = ::getpwnam(user_.c_str())->pw_uid;
  try {
    check_binaries();
    prepare_dirs();
    initdb();
    clear_stale_pid();
    start_server();
    wait_ready();
    ensure_database();
  } catch (...) {
    stop();
    throw;
  }
}

embedded_postgres::~embedded_postgres() {
  stop();
}

void embedded_postgres::check_binaries() const {
  for (const char* b : {"postgres", "initdb"}) {
    const std::string p = options_.bin_dir + "/" + b;
    if (::access(p.c_str(), X_OK) != 0)
      throw start_error("the embedded PostgreSQL needs " + p + " (" + errno_text() +
                        "); install postgresql-15 (scripts/setup) or give --postgres with an "
                        "existing server");
  }
  const std::string socket_file = options_.dir + "/sock/.s.PGSQL." + std::to_string(options_.port);
  if (socket_file.size() >= sizeof(sockaddr_un::sun_path))
    throw start_error("the embedded PostgreSQL's socket " + socket_file + " would be " +
                      std::to_string(socket_file.size()) + " bytes long, more than a unix " +
                      "socket path can hold (" + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                      "); choose a shorter --data-dir");
}

void embedded_postgres::prepare_dirs() const {
  for (const std::string& d : {options_.dir, sock()}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST)
      throw start_error("cannot create " + d + ": " + errno_text());
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw start_error(d + " is not a directory; move it away");
    if (st.st_uid != uid_) {
      if (::geteuid() != 0)
        throw start_error(d + " is not owned by " + user_ + ", the user PostgreSQL runs as; " +
                          "chown it or choose another --data-dir");
      if (::chown(d.c_str(), uid_, gid_) != 0)
        throw start_error("cannot hand " + d + " to " + user_ + ": " + errno_text());
    }
    if (::chmod(d.c_str(), 0700) != 0)
      throw start_error("cannot set " + d + " to mode 0700: " + errno_text());
  }
  // The server's user must reach its directory from /, through the data directory's
  // parents, which sandboxd does not own (a data directory under /root is out of reach).
  const identity who = identity_of(user_, uid_, gid_);
  const std::string dir = options_.dir;
  const pid_t pid = ::fork();
  if (pid == 0) {
    bool ok = true;
    if (who.change)
      ok = ::setgroups(who.groups.size(), who.groups.data()) == 0 && ::setgid(who.gid) == 0 &&
           ::setuid(who.uid) == 0;
    ::_exit(ok && ::access(dir.c_str(), R_OK | W_OK | X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (pid < 0 || !exited_ok(status))
    throw start_error("the embedded PostgreSQL runs as " + user_ + ", which cannot reach " + dir +
                      ": a directory above it is closed to that user (e.g. /root is " +
                      "mode 0700); choose a --data-dir that " + user_ +
                      " can traverse (e.g. /var/lib/sandboxd), or give --postgres");
}

void embedded_postgres::initdb() {
  const std::string version_file = data() + "/PG_VERSION";
  const child_env env = make_env(options_.dir);
  const identity who = identity_of(user_, uid_, gid_);
  // The major version of the binaries: "postgres (PostgreSQL) 15.14 (Debian ...)".
  const std::string version_log = options_.dir + "/version.out";
  fs::remove(version_log);
  run_as(who, {options_.bin_dir + "/postgres", "-V"}, version_log, env);
  std::string v = read_text(version_log);
  fs::remove(version_log);
  const auto at = v.find(") ");
  const std::string major =
    at == std::string::npos ? "" : v.substr(at + 2, v.find_first_of(".\n ", at + 2) - (at + 2));

  if (fs::exists(version_file)) {
    const std::string have = trim(read_text(version_file));
    if (!major.empty() && have != major)
      throw start_error("the embedded PostgreSQL cluster in " + data() + " was made by " +
                        "PostgreSQL " + have + ", but " + options_.bin_dir + " holds PostgreSQL " +
                        major + "; give --postgres-bin-dir for version " + have +
                        ", or upgrade the cluster with pg_upgrade");
    return;
  }
  if (fs::exists(data()))
    throw start_error(data() + " exists but holds no PostgreSQL cluster (no PG_VERSION); " +
                      "move it away so that sandboxd can make a new one");

  const std::string staging = options_.dir + "/data.init";
  std::error_code ec;
  fs::remove_all(staging, ec);
  const std::string log = options_.dir + "/initdb.log";
  spdlog::info("embedded PostgreSQL: initialising a new cluster in {} (as {})", data(), user_);
  const int status = run_as(who,
                            {options_.bin_dir + "/initdb", "-D", staging, "-U", "postgres", "-A",
                             "trust", "-E", "UTF8", "--locale=C", "--no-instructions"},
                            log, env);
  if (!exited_ok(status))
    throw start_error("initdb failed for the embedded PostgreSQL in " + staging + ":\n" +
                      read_text(log) + "\nfix the cause and start again");
  fs::rename(staging, data());
  const int dfd = ::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  initialised_ = true;
}

void embedded_postgres::clear_stale_pid() const {
  const std::string pid_file = data() + "/postmaster.pid";
  if (!fs::exists(pid_file))
    return;
  std::string first;
  std::istringstream(read_text(pid_file)) >> first;
  pid_t other = 0;
  try {
    other = static_cast<pid_t>(std::stol(first));
  } catch (...) {
    other = 0;
  }
  bool ours = false;
  if (other > 0 && alive(other)) {
    // A server on this cluster has its working directory in it (postmaster chdirs there).
    std::error_code ec;
    const auto cwd = fs::read_symlink("/proc/" + std::to_string(other) + "/cwd", ec);
    ours = !ec && fs::equivalent(cwd, data(), ec) && !ec &&
           trim(read_text("/proc/" + std::to_string(other) + "/comm")) == "postgres";
  }
  if (!ours) {
    spdlog::warn("embedded PostgreSQL: removing the stale {} (pid {} {})", pid_file, first,
                 other > 0 && alive(other) ? "now names another process" : "is gone");
    fs::remove(pid_file);
    return;
  }
  spdlog::warn("embedded PostgreSQL: a server (pid {}) still runs on {}, left by an earlier "
               "sandboxd; stopping it",
               other, data());
  ::kill(other, SIGINT);
  if (wait_gone(other, options_.stop_timeout))
    return;
  ::kill(other, SIGQUIT);
  if (wait_gone(other, 10s))
    return;
  ::kill(other, SIGKILL);
  if (!wait_gone(other, 10s))
    throw start_error("an earlier PostgreSQL server (pid " + std::to_string(other) + ") on " +
                      data() + " does not stop; stop it by hand");
}

void embedded_postgres::start_server() {
  std::vector<std::string> argv = {options_.bin_dir + "/postgres",
                                   "-D",
                                   data(),
                                   "-k",
                                   sock(),
                                   "-p",
                                   std::to_string(options_.port),
                                   "-c",
                                   "listen_addresses=",
                                   "-c",
                                   "unix_socket_permissions=0700",
                                   "-c",
                                   "fsync=on",
                                   "-c",
                                   "full_page_writes=on",
                                   "-c",
                                   "synchronous_commit=on",
                                   "-c",
                                   "logging_collector=off"};
  const std::string log = options_.dir + "/server.log";
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out < 0)
    throw start_error("cannot open " + log + ": " + errno_text());
  const identity who = identity_of(user_, uid_, gid_);
  if (who.change && ::fchown(out, who.uid, who.gid) != 0) {
    ::close(out);
    throw start_error("cannot hand " + log + " to " + user_ + ": " + errno_text());
  }
  spdlog::info("embedded PostgreSQL: starting the server on {} (as {}, socket in {})", data(),
               user_, sock());
  keeper_ = std::thread([this, argv, out, who, env = make_env(options_.dir)]() mutable {
    auto args = pointers_of(argv);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      if (become(who, out) && ::prctl(PR_SET_PDEATHSIG, SIGQUIT) == 0 && ::getppid() == parent)
        ::execve(args[0], args.data(), env.pointers.data());
      ::_exit(127);
    }
    ::close(out);
    {
      std::lock_guard l(mu_);
      if (pid < 0) {
        spawn_error_ = errno_text();
        exited_ = true;
      } else {
        pid_ = pid;
      }
    }
    cv_.notify_all();
    if (pid < 0)
      return;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    {
      std::lock_guard l(mu_);
      exited_ = true;
      exit_status_ = status;
      pid_ = -1;
    }
    cv_.notify_all();
  });
}

void embedded_postgres::wait_ready() {
  const std::string probe = "host=" + conninfo_value(sock()) +
                            " port=" + std::to_string(options_.port) +
                            " user=postgres dbname=postgres connect_timeout=5";
  const auto until = std::chrono::steady_clock::now() + options_.start_timeout;
  for (;;) {
    {
      std::lock_guard l(mu_);
      if (exited_) {
        if (!spawn_error_.empty())
          throw start_error("cannot start the embedded PostgreSQL: " + spawn_error_);
        throw start_error("the embedded PostgreSQL on " + data() + " exited while starting (" +
                          (WIFSIGNALED(exit_status_)
                             ? "signal " + std::to_string(WTERMSIG(exit_status_))
                             : "status " + std::to_string(WEXITSTATUS(exit_status_))) +
                          "); the end of its log:\n" + log_tail());
      }
    }
    if (::PQping(probe.c_str()) == PQPING_OK)
      return;
    if (std::chrono::steady_clock::now() > until)
      throw start_error("the embedded PostgreSQL on " + data() + " did not accept connections " +
                        "within " + std::to_string(options_.start_timeout.count()) +
                        " s; the end of its log:\n" + log_tail());
    std::this_thread::sleep_for(30ms);
  }
}

void embedded_postgres::ensure_database() const {
  const std::string admin = "host=" + conninfo_value(sock()) +
                            " port=" + std::to_string(options_.port) +
                            " user=postgres dbname=postgres";
  pqxx::connection c(admin);
  pqxx::nontransaction tx(c);
  auto r = tx.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", options_.database);
  if (r.empty()) {
    tx.exec("CREATE DATABASE " + tx.quote_name(options_.database));
    spdlog::info("embedded PostgreSQL: created database {}", options_.database);
  }
}

std::string embedded_postgres::log_tail() const {
  std::string all = read_text(options_.dir + "/server.log");
  return all.size() > 4000 ? all.substr(all.size() - 4000) : all;
}

std::string embedded_postgres::conninfo() const {
  return "host=" + conninfo_value(sock()) + " port=" + std::to_string(options_.port) +
         " user=postgres dbname=" + conninfo_value(options_.database);
}

pid_t embedded_postgres::pid() const {
  std::lock_guard l(mu_);
  return exited_ ? -1 : pid_;
}

void embedded_postgres::stop() {
  if (!keeper_.joinable())
    return;
  std::unique_lock l(mu_);
  cv_.wait(l, [&] { return pid_ > 0 || exited_; });
  struct step {
    int signal;
    std::chrono::milliseconds wait;
  };
  const step steps[] = {{SIGINT, options_.stop_timeout}, {SIGQUIT, 10s}, {SIGKILL, 10s}};
  for (const auto& s : steps) {
    if (exited_)
      break;
    if (s.signal == SIGINT)
      spdlog::info("embedded PostgreSQL: stopping the server (pid {})", pid_);
    else
      spdlog::warn("embedded PostgreSQL: the server (pid {}) did not stop; sending signal {}", pid_,
                   s.signal);
    ::kill(pid_, s.signal);
    cv_.wait_for(l, s.wait, [&] { return exited_; });
  }
  l.unlock();
  keeper_.join();
}

} // namespace sandboxd::node
