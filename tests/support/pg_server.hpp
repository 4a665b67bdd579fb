// pg_server — a private PostgreSQL 15 server for one test binary.
//
// Each server lives in its own /tmp/sandboxd-test-pg-* directory: initdb there, a
// unix socket in a private directory (no TCP listener, so parallel test binaries
// never clash), fsync off for speed. Commits stay synchronous, so a committed
// transaction survives kill() (the operating system keeps what fsync skipped). When the process
// runs as root the server runs as the `postgres` user, as PostgreSQL requires. A guardian process
// stops the server and removes the directory when the owner goes away, even by SIGKILL.
#pragma once

#include <memory>
#include <string>

namespace sandboxd::test {

class guardian;

class pg_server {
public:
  // Creates the cluster and starts the server. Throws with the server log on failure.
  pg_server();
  ~pg_server();
  pg_server(const pg_server&) = delete;
  pg_server& operator=(const pg_server&) = delete;

  // libpq connection string for the `postgres` database as the `postgres` user.
  std::string conninfo() const;
  // Connection string for another database on the same server.
  std::string conninfo(const std::string& dbname) const;
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }

  // Stops the server at once (no shutdown checkpoint: like a crash).
  void kill();
  // Starts the server again on the same data directory and port.
  void start();
  bool running() const { return running_; }

  // One server shared by every test of the binary, started on first use.
  static pg_server& shared();

private:
  void pg_ctl(const std::string& args, bool must_succeed) const;

  std::string dir_;
  int port_ = 0;
  bool running_ = false;
  std::unique_ptr<guardian> guardian_;
};

} // namespace sandboxd::test
