// The node's parts on this machine: the data directory's checks and lock, the development
// token file, the embedded PostgreSQL (production settings, its own user, no TCP, what a
// crash leaves behind), and quiescing sandboxes at stop.
#define BOOST_TEST_MODULE node_parts
#include <boost/test/unit_test.hpp>

#include "node/data_directory.hpp"
#include "node/embedded_postgres.hpp"
#include "node/runtime_quiesce.hpp"
#include "node/runtime_set.hpp"
#include "node/start_error.hpp"
#include "node/tokens.hpp"
#include "tests/node/node_fixture.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <pqxx/pqxx>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nd = sandboxd::node;
namespace ev = sandboxd::events;
namespace rt = sandboxd::runtime;
namespace utf = boost::unit_test;
using sandboxd::test::temp_dir;

namespace {

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const nd::start_error& e) {
    return e.what();
  }
  return "";
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 07777;
}

boost::test_tools::assertion_result as_root(utf::test_unit_id) {
  boost::test_tools::assertion_result r(::geteuid() == 0);
  r.message() << "needs root (other users' files, the postgres user)";
  return r;
}

// A directory the postgres user can traverse (temp dirs are 0700).
struct pg_reachable_dir {
  temp_dir tmp{"node-pg"};
  pg_reachable_dir() { ::chmod(tmp.path().c_str(), 0711); }
};

std::string status_uid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream s(line.substr(4));
      std::string real;
      s >> real;
      return real;
    }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(data_directory)

BOOST_AUTO_TEST_CASE(a_missing_directory_is_made_private) {
  temp_dir tmp("node-dir");
  const std::string path = tmp.path() + "/a/b/data";
  nd::data_directory d(path);
  BOOST_TEST(d.path() == path);
  BOOST_TEST(std::filesystem::is_directory(path));
  BOOST_TEST(mode_of(path) == 0700u);
}

BOOST_AUTO_TEST_CASE(an_open_directory_is_closed_to_others) {
  temp_dir tmp("node-dir");
  const std::string path = tmp.path() + "/data";
  ::mkdir(path.c_str(), 0777);
  ::chmod(path.c_str(), 0777);
  nd::data_directory d(path);
  BOOST_TEST(mode_of(path) == 0700u);
}

BOOST_AUTO_TEST_CASE(a_directory_of_another_user_is_refused, *utf::precondition(as_root)) {
  temp_dir tmp("node-dir");
  const std::string path = tmp.path() + "/data";
  ::mkdir(path.c_str(), 0700);
  const passwd* nobody = ::getpwnam("nobody");
  BOOST_REQUIRE(nobody);
  BOOST_REQUIRE_EQUAL(::chown(path.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  const auto m = refusal([&] { nd::data_directory d(path); });
  BOOST_TEST_MESSAGE(m);
  BOOST_TEST(m.find("owned by nobody") != std::string::npos);
  BOOST_TEST(m.find("sandboxd runs as root") != std::string::npos);
  BOOST_TEST(!std::filesystem::exists(path + "/sandboxd.lock"));
}

BOOST_AUTO_TEST_CASE(a_second_holder_is_refused_with_the_first_ones_pid) {
  temp_dir tmp("node-dir");
  const std::string path = tmp.path() + "/data";
  {
    nd::data_directory first(path);
    const auto m = refusal([&] { nd::data_directory second(path); });
    BOOST_TEST(m.find("in use by another sandboxd (pid " + std::to_string(::getpid()) + ")") !=
               std::string::npos);
  }
  nd::data_directory after(path); // released with the first
}

BOOST_AUTO_TEST_CASE(the_embedded_postgres_group_may_only_traverse, *utf::precondition(as_root)) {
  temp_dir tmp("node-dir");
  const std::string path = tmp.path() + "/data";
  const auto gid = nd::embedded_postgres::server_identity().second;
  nd::data_directory d(path, gid);
  struct stat st {};
  ::stat(path.c_str(), &st);
  BOOST_TEST((st.st_mode & 07777) == 0710u);
  BOOST_TEST(st.st_gid == gid);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dev_token)

BOOST_AUTO_TEST_CASE(made_once_private_then_read_back) {
  temp_dir tmp("node-token");
  const std::string path = tmp.path() + "/dev-token";
  const auto first = nd::ensure_dev_token(path);
  BOOST_TEST(first.made);
  BOOST_TEST(mode_of(path) == 0600u);
  const auto again = nd::ensure_dev_token(path);
  BOOST_TEST(!again.made);
  BOOST_TEST(again.token == first.token);
  const auto who = nd::dev_token_identity();
  BOOST_TEST(who.has(nd::scope::admin));
  BOOST_TEST(who.has(nd::scope::sandboxes));
}

BOOST_AUTO_TEST_CASE(a_token_others_could_read_is_refused) {
  temp_dir tmp("node-token");
  const std::string path = tmp.path() + "/dev-token";
  nd::ensure_dev_token(path);
  ::chmod(path.c_str(), 0644);
  const auto m = refusal([&] { nd::ensure_dev_token(path); });
  BOOST_TEST(m.find("mode 0600") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(embedded_postgres, *utf::precondition(sandboxd::test::postgres_installed))

BOOST_AUTO_TEST_CASE(runs_with_production_settings_as_its_own_user_without_tcp) {
  pg_reachable_dir dir;
  nd::embedded_postgres_options o;
  o.dir = dir.tmp.path() + "/postgres";
  pid_t pid = -1;
  {
    nd::embedded_postgres pg(o);
    BOOST_TEST(pg.initialised());
    pid = pg.pid();
    BOOST_REQUIRE(pid > 0);
    pqxx::connection c(pg.conninfo());
    pqxx::work tx(c);
    BOOST_TEST(tx.exec1("SHOW fsync")[0].as<std::string>() == "on");
    BOOST_TEST(tx.exec1("SHOW full_page_writes")[0].as<std::string>() == "on");
    BOOST_TEST(tx.exec1("SHOW synchronous_commit")[0].as<std::string>() == "on");
    BOOST_TEST(tx.exec1("SHOW listen_addresses")[0].as<std::string>() == "");
    BOOST_TEST(tx.exec1("SELECT current_database()")[0].as<std::string>() == "sandboxd");
    BOOST_TEST(mode_of(o.dir + "/sock") == 0700u);
    if (::geteuid() == 0) {
      BOOST_TEST(pg.server_user() == "postgres");
      BOOST_TEST(status_uid(pid) == std::to_string(::getpwnam("postgres")->pw_uid));
    }
    // Committed data survives a stop and a start (and initdb is not run again).
    tx.exec("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)");
    tx.commit();
  }
  BOOST_TEST(::kill(pid, 0) != 0, "the server still runs after stop");
  nd::embedded_postgres again(o);
  BOOST_TEST(!again.initialised());
  pqxx::connection c(again.conninfo());
  pqxx::work tx(c);
  BOOST_TEST(tx.exec1("SELECT v FROM kept")[0].as<int>() == 42);
}

BOOST_AUTO_TEST_CASE(a_stale_postmaster_pid_naming_another_process_is_removed) {
  pg_reachable_dir dir;
  nd::embedded_postgres_options o;
  o.dir = dir.tmp.path() + "/postgres";
  { nd::embedded_postgres pg(o); }
  // As after a crash and a reboot: the file names a pid that now belongs to another live
  // process of the server's user (PostgreSQL itself takes a pid it may not signal, or its
  // parent's, for stale), so PostgreSQL alone would refuse to start ("lock file already
  // exists").
  const auto server_uid = ::geteuid() == 0 ? ::getpwnam("postgres")->pw_uid : ::geteuid();
  const auto server_gid = ::geteuid() == 0 ? ::getpwnam("postgres")->pw_gid : ::getegid();
  const pid_t other = ::fork();
  if (other == 0) {
    if (::getuid() == 0 && (::setgid(server_gid) != 0 || ::setuid(server_uid) != 0))
      ::_exit(126);
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  BOOST_REQUIRE(other > 0);
  struct reap {
    pid_t pid;
    ~reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{other};
  const std::string pid_file = o.dir + "/data/postmaster.pid";
  {
    std::ofstream f(pid_file);
    f << other << "\n" << o.dir << "/data\n1700000000\n5432\n";
  }
  if (::geteuid() == 0)
    sandboxd::test::check_shell("chown postgres " + sandboxd::test::shell_quote(pid_file));
  nd::embedded_postgres pg(o);
  BOOST_TEST(pg.pid() > 0);
  pqxx::connection c(pg.conninfo());
  BOOST_TEST(c.is_open());
}

BOOST_AUTO_TEST_CASE(a_server_left_running_on_the_cluster_is_stopped_first) {
  pg_reachable_dir dir;
  nd::embedded_postgres_options o;
  o.dir = dir.tmp.path() + "/postgres";
  { nd::embedded_postgres pg(o); }
  // A server on the same cluster that no node owns (as one left by a node that died in a
  // way its parent-death signal did not cover).
  const std::string as = ::geteuid() == 0 ? "runuser -u postgres -- " : "";
  const std::string q = sandboxd::test::shell_quote(o.dir);
  sandboxd::test::check_shell(as + o.bin_dir + "/pg_ctl -D " + q + "/data -l " + q +
                              "/other.log -w -o \"-k " + q +
                              "/sock -c listen_addresses=''\" start");
  std::ifstream f(o.dir + "/data/postmaster.pid");
  pid_t other = 0;
  f >> other;
  BOOST_REQUIRE(other > 0);
  BOOST_REQUIRE(::kill(other, 0) == 0);
  nd::embedded_postgres pg(o);
  BOOST_TEST(::kill(other, 0) != 0, "the earlier server still runs");
  BOOST_TEST(pg.pid() != other);
  pqxx::connection c(pg.conninfo());
  BOOST_TEST(c.is_open());
}

BOOST_AUTO_TEST_CASE(a_data_directory_postgres_cannot_reach_is_refused,
                     *utf::precondition(as_root)) {
  temp_dir tmp("node-pg"); // 0700 root: closed to the postgres user
  nd::embedded_postgres_options o;
  o.dir = tmp.path() + "/postgres";
  const auto m = refusal([&] { nd::embedded_postgres pg(o); });
  BOOST_TEST_MESSAGE(m);
  BOOST_TEST(m.find("cannot reach") != std::string::npos);
  BOOST_TEST(m.find("--data-dir") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(quiesce_stops_running_sandboxes_and_restore_runs_them_again) {
  temp_dir tmp("node-quiesce");
  nd::node_probe probe;
  nd::runtime_choice choice;
  choice.kinds = {ev::runtime_kind::hollow};
  choice.default_kind = ev::runtime_kind::hollow;
  const std::string file = tmp.path() + "/quiesced";
  {
    nd::runtime_set set(choice, tmp.path() + "/runtimes", probe);
    auto& d = set.default_driver();
    for (const char* id : {"run1", "run2", "mem", "fs"}) {
      rt::create_request c;
      c.id = id;
      BOOST_REQUIRE(d.create(c).ok());
      BOOST_REQUIRE(d.start(id).ok());
    }
    BOOST_REQUIRE(d.pause("mem", rt::pause_mode::memory).ok());
    BOOST_REQUIRE(d.pause("fs", rt::pause_mode::filesystem).ok());
    const auto q = nd::quiesce_sandboxes(set, file);
    BOOST_TEST(q.stopped.size() == 2u);
    BOOST_TEST(q.kept == std::vector<std::string>{"hollow/mem"});
    BOOST_TEST(q.failed.empty());
    BOOST_TEST(d.inspect("run1")->status == rt::sandbox_status::paused_filesystem);
    BOOST_TEST(d.inspect("mem")->status == rt::sandbox_status::paused_memory);
    BOOST_TEST(std::filesystem::exists(file));
  }
  // The next start, with a new driver on the same directory.
  nd::runtime_set set(choice, tmp.path() + "/runtimes", probe);
  auto& d = set.default_driver();
  const auto r = nd::restore_sandboxes(set, file);
  BOOST_TEST(r.restored.size() == 2u);
  BOOST_TEST(r.failed.empty());
  BOOST_TEST(d.inspect("run1")->status == rt::sandbox_status::running);
  BOOST_TEST(d.inspect("run2")->status == rt::sandbox_status::running);
  BOOST_TEST(d.inspect("fs")->status == rt::sandbox_status::paused_filesystem);
  BOOST_TEST(!std::filesystem::exists(file));
  // Nothing listed: nothing done.
  BOOST_TEST(nd::restore_sandboxes(set, file).restored.empty());
}
