// The private PostgreSQL server every integration suite relies on: real rows through
// libpqxx, and one server per test binary even when binaries run at the same time.
#define BOOST_TEST_MODULE pg_server
#include <boost/test/unit_test.hpp>

#include "tests/support/pg_server.hpp"
#include "tests/support/process.hpp"

#include <pqxx/pqxx>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using sandboxd::test::pg_server;

namespace utf = boost::unit_test;

BOOST_AUTO_TEST_CASE(rows_written_through_libpqxx_read_back) {
  pqxx::connection c(pg_server::shared().conninfo());
  pqxx::work w(c);
  w.exec("CREATE TABLE sandboxes_probe (id text PRIMARY KEY, memory_mib bigint NOT NULL)");
  for (int i = 0; i < 100; ++i)
    w.exec_params("INSERT INTO sandboxes_probe VALUES ($1, $2)", "sb_" + std::to_string(i),
                  i * 256);
  w.commit();

  pqxx::work r(c);
  auto row = r.exec1("SELECT count(*), sum(memory_mib) FROM sandboxes_probe");
  BOOST_TEST(row[0].as<long>() == 100);
  BOOST_TEST(row[1].as<long>() == 256L * (99 * 100 / 2));
  BOOST_TEST(r.exec1("SELECT memory_mib FROM sandboxes_probe WHERE id = 'sb_42'")[0].as<long>() ==
             42 * 256);
}

BOOST_AUTO_TEST_CASE(server_survives_a_kill_and_restart) {
  pg_server server;
  {
    pqxx::connection c(server.conninfo());
    pqxx::work w(c);
    w.exec("CREATE TABLE t (v int)");
    w.exec("INSERT INTO t VALUES (7)");
    w.commit();
  }
  server.kill();
  BOOST_CHECK_THROW(pqxx::connection(server.conninfo()), pqxx::broken_connection);
  server.start();
  pqxx::connection c(server.conninfo());
  pqxx::work w(c);
  BOOST_TEST(w.exec1("SELECT v FROM t")[0].as<int>() == 7);
}

// Run only by second_test_binary_gets_its_own_server, as a second process of this binary.
BOOST_AUTO_TEST_CASE(child_reports_its_server, *utf::disabled()) {
  const char* report = std::getenv("SANDBOXD_PG_CHILD_REPORT");
  BOOST_REQUIRE(report != nullptr);
  pg_server server;
  pqxx::connection c(server.conninfo());
  pqxx::work w(c);
  bool has_parent_table =
    w.exec1("SELECT count(*) FROM pg_tables WHERE tablename = 'parent_only'")[0].as<int>() > 0;
  std::ofstream out(report);
  out << server.dir() << "\n" << (has_parent_table ? "sees-parent" : "own-server") << "\n";
}

BOOST_AUTO_TEST_CASE(second_test_binary_gets_its_own_server) {
  pg_server server;
  {
    pqxx::connection c(server.conninfo());
    pqxx::work w(c);
    w.exec("CREATE TABLE parent_only (v int)");
    w.commit();
  }
  std::string report = server.dir() + "/child-report";
  std::string self =
    sandboxd::test::check_shell("readlink /proc/" + std::to_string(::getpid()) + "/exe");
  self.erase(self.find_last_not_of("\n") + 1);
  auto r = sandboxd::test::run_shell("SANDBOXD_PG_CHILD_REPORT=" + report + " " +
                                     sandboxd::test::shell_quote(self) +
                                     " --run_test=child_reports_its_server --log_level=nothing");
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.output);
  std::ifstream in(report);
  std::string child_dir, verdict;
  std::getline(in, child_dir);
  std::getline(in, verdict);
  BOOST_TEST(!child_dir.empty());
  BOOST_TEST(child_dir != server.dir());
  BOOST_TEST(verdict == "own-server");
  // The child's server is gone with the child.
  struct stat st;
  BOOST_TEST(::stat(child_dir.c_str(), &st) != 0);
  // Ours is still up.
  pqxx::connection c(server.conninfo());
  BOOST_TEST(c.is_open());
}
