// postgres_installed — the Boost.Test precondition of the projection tests that start a
// private PostgreSQL server (tests/support/pg_server.hpp): they are skipped, saying why, on a
// machine where that server cannot start — its binaries absent, or, when running as root, no
// `postgres` user to run them as (PostgreSQL refuses root).
#pragma once

#include <boost/test/unit_test.hpp>

#include <pwd.h>
#include <unistd.h>

namespace sandboxd::test {

// Where pg_server runs PostgreSQL 15 from (Debian's postgresql-15 package).
inline constexpr const char* k_postgres_initdb = "/usr/lib/postgresql/15/bin/initdb";

inline boost::test_tools::assertion_result postgres_installed(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(true);
  if (::access(k_postgres_initdb, X_OK) != 0) {
    r = false;
    r.message() << "PostgreSQL 15 is not installed (no " << k_postgres_initdb
                << "); scripts/setup installs it";
  } else if (::geteuid() == 0 && ::getpwnam("postgres") == nullptr) {
    r = false;
    r.message() << "running as root but there is no `postgres` user to run PostgreSQL as;"
                   " scripts/setup makes it with the postgresql package";
  }
  return r;
}

} // namespace sandboxd::test
