// embedded_postgres — a private PostgreSQL 15 server that the node initialises, starts and
// stops itself, under DATA_DIR/postgres:
//
//   postgres/data/        the cluster (initdb on first start; made in data.init/ and renamed,
//                         so a crash during initdb leaves no half cluster)
//   postgres/sock/        the unix socket (mode 0700): the only way in; no TCP listener
//   postgres/server.log   the server's own log (stderr), appended
//
// Guarantees:
// - Production settings: fsync, full page writes and synchronous commit stay on, so a
//   committed transaction survives a crash of the node, of the server, or of the machine.
// - It runs as the `postgres` user when sandboxd runs as root (initdb and postgres refuse
//   root), else as sandboxd's own user. Local connections are trusted: only the server's
//   user and root can reach the socket directory.
// - The server is a child of the thread that keeps it (a thread of this object) in its
//   own process group (a terminal's ^C reaches only sandboxd, which stops it in order),
//   and it gets SIGQUIT (PostgreSQL's immediate shutdown) when that thread goes — also
//   when the whole process is killed with SIGKILL — so a dead node never leaves a server
//   running.
// - A postmaster.pid left by a crash is handled: a live server on this cluster (an
//   earlier node's, still shutting down) is stopped and waited for; a pid that is gone
//   or now names another process is a stale file and is removed.
// - Construction returns once the server accepts connections and the database exists;
//   it throws start_error (with the end of server.log) otherwise.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>

namespace sandboxd::node {

struct embedded_postgres_options {
  std::string dir; // DATA_DIR/postgres
  std::string bin_dir = "/usr/lib/postgresql/15/bin";
  std::string database = "sandboxd";
  int port = 5432; // names the socket file only (.s.PGSQL.<port>); there is no TCP listener
  std::chrono::seconds start_timeout{300}; // crash recovery replays WAL before it answers
  std::chrono::seconds stop_timeout{60};   // fast shutdown, then immediate, then SIGKILL
};

class embedded_postgres {
public:
  explicit embedded_postgres(embedded_postgres_options options);
  // stop()
  ~embedded_postgres();
  embedded_postgres(const embedded_postgres&) = delete;
  embedded_postgres& operator=(const embedded_postgres&) = delete;

  // Fast shutdown (open transactions rolled back, a checkpoint written), waited for.
  // Idempotent.
  void stop();

  // libpq conninfo of the database, over the private socket.
  std::string conninfo() const;
  // The postmaster's pid while it runs, else -1.
  pid_t pid() const;
  // Whether this start made the cluster (initdb).
  bool initialised() const { return initialised_; }
  // The user the server runs as.
  const std::string& server_user() const { return user_; }

  // The user an embedded server would run as here: "postgres" when sandboxd is root,
  // else sandboxd's own; and that user's gid. Throws start_error when root and there is
  // no `postgres` user.
  static std::pair<std::string, gid_t> server_identity();

private:
  void check_binaries() const;
  void prepare_dirs() const;
  void initdb();
  void clear_stale_pid() const;
  void start_server();
  void wait_ready();
  void ensure_database() const;
  std::string log_tail() const;
  std::string data() const { return options_.dir + "/data"; }
  std::string sock() const { return options_.dir + "/sock"; }

  embedded_postgres_options options_;
  std::string user_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  bool initialised_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_status_ = 0;
  std::string spawn_error_;
  std::thread keeper_; // forks the server, waits for it to end
};

} // namespace sandboxd::node
