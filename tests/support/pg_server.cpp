#include "tests/support/pg_server.hpp"

#include "tests/support/guardian.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace sandboxd::test {

namespace {

constexpr const char* bin_dir = "/usr/lib/postgresql/15/bin";

// Prefix that runs a PostgreSQL binary as the postgres user when we are root.
std::string as_server_user() {
  return ::geteuid() == 0 ? "runuser -u postgres -- " : "";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

pg_server::pg_server() {
  temp_dir tmp("pg");
  dir_ = tmp.release();
  guardian_ = std::make_unique<guardian>(
    as_server_user() + bin_dir + "/pg_ctl -D " + shell_quote(dir_ + "/data") +
    " -m immediate -w stop >/dev/null 2>&1; rm -rf " + shell_quote(dir_));
  try {
    if (::geteuid() == 0)
      check_shell("chown postgres " + shell_quote(dir_));
    check_shell(as_server_user() + "mkdir -p " + shell_quote(dir_ + "/sock"));
    check_shell(as_server_user() + bin_dir + "/initdb -D " + shell_quote(dir_ + "/data") +
                " -U postgres -A trust -E UTF8 --locale=C --no-sync --no-instructions");
    port_ = free_port();
    start();
  } catch (...) {
    guardian_.reset();
    throw;
  }
}

pg_server::~pg_server() {
  guardian_.reset(); // stops the server and removes the directory
}

void pg_server::pg_ctl(const std::string& args, bool must_succeed) const {
  std::string cmd =
    as_server_user() + bin_dir + "/pg_ctl -D " + shell_quote(dir_ + "/data") + " " + args;
  auto r = run_shell(cmd);
  if (must_succeed && r.exit_code != 0)
    throw std::runtime_error("pg_ctl failed: " + cmd + "\n" + r.output + "\nserver log:\n" +
                             read_file(dir_ + "/server.log"));
}

void pg_server::start() {
  std::string opts = "-k " + dir_ + "/sock -p " + std::to_string(port_) +
                     " -c listen_addresses='' -c fsync=off -c full_page_writes=off"
                     " -c max_connections=200";
  pg_ctl("-l " + shell_quote(dir_ + "/server.log") + " -w -t 60 -o " + shell_quote(opts) + " start",
         true);
  running_ = true;
}

void pg_server::kill() {
  pg_ctl("-m immediate -w stop", true);
  running_ = false;
}

std::string pg_server::conninfo() const {
  return conninfo("postgres");
}

std::string pg_server::conninfo(const std::string& dbname) const {
  return "host=" + dir_ + "/sock port=" + std::to_string(port_) + " user=postgres dbname=" + dbname;
}

pg_server& pg_server::shared() {
  static pg_server server;
  return server;
}

} // namespace sandboxd::test
