// Crash test: a projecting process is SIGKILLed at random moments and PostgreSQL is killed
// and restarted while batches are being applied; afterwards the live read models equal a
// rebuild from offset zero, row for row, billing and audit included.
//
// The read models and the offsets must move in one transaction. The sequence guard would hide
// a replay after a crash between two separate commits (the end state would still equal a
// rebuild), so what is committed is checked at every poll and after every kill: each event of
// the stream (no duplicates in it) makes one audit row, so a partition's audit rows must
// number exactly its committed next offset. Half the kills freeze the child first: the parent
// locks projection_offsets (EXCLUSIVE: reads go on, the child's next FOR UPDATE or offset
// write waits) and kills it while it holds that lock, so a step whose rows are committed
// apart from its offsets would be caught between the two, every time.
//
// The projecting process is this binary again, running the disabled test case
// `projecting_child` (it owns the file log while it runs: file_log admits one process). The
// kill points come from a seed, printed, and taken from SANDBOXD_TEST_SEED when set.
#define BOOST_TEST_MODULE projection_crash
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "projections/audit_log.hpp"
#include "projections/projector.hpp"
#include "projections/rebuild.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_seed.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using namespace sandboxd;
using namespace sandboxd::projections;

namespace utf = boost::unit_test;

namespace {

constexpr const char* k_schema = "live";

events::file_log_options log_options(const std::string& dir) {
  events::file_log_options o;
  o.dir = dir;
  o.partitions = 4;
  return o;
}

projector_options child_options() {
  projector_options o;
  o.schema = k_schema;
  o.max_batch = 150;
  o.min_backoff = 20ms;
  o.max_backoff = 300ms;
  return o;
}

pid_t spawn_child(const std::string& mode) {
  ::setenv("SANDBOXD_CRASH_MODE", mode.c_str(), 1);
  pid_t pid = ::fork();
  if (pid == 0) {
    const char* argv[] = {"/proc/self/exe", "--run_test=postgres/projecting_child",
                          "--log_level=nothing", nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  BOOST_REQUIRE(pid > 0);
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// What the child has committed, read in one statement (one snapshot) per poll over one
// connection that is reopened after PostgreSQL was restarted: per partition, the stored next
// offset and the number of audit rows. Polling takes about a millisecond, so the parent sees
// the child's progress batch by batch.
struct committed_state {
  std::int64_t records = 0; // the sum of the stored offsets
  // Partitions whose audit rows do not number their stored offset, as "partition p: n audit
  // rows at offset o"; empty when the rows and the offsets were committed together.
  std::vector<std::string> mismatches;
};

committed_state read_committed_state(pqxx::transaction_base& tx) {
  committed_state out;
  for (const auto& row : tx.exec(
         "SELECT o.partition, o.next_offset, coalesce(a.n, 0) FROM live.projection_offsets o"
         " LEFT JOIN (SELECT partition, count(*) AS n FROM live.audit_log GROUP BY partition) a"
         "  USING (partition) ORDER BY o.partition")) {
    auto offset = row[1].as<std::int64_t>();
    auto rows = row[2].as<std::int64_t>();
    out.records += offset;
    if (rows != offset)
      out.mismatches.push_back("partition " + row[0].as<std::string>() + ": " +
                               std::to_string(rows) + " audit rows at offset " +
                               std::to_string(offset));
  }
  return out;
}

std::string first_of(const std::vector<std::string>& v) {
  return v.empty() ? "" : v.front();
}

class progress_probe {
public:
  explicit progress_probe(std::string conninfo) : conninfo_(std::move(conninfo)) {}

  // The records committed; 0 before the first child made the tables, -1 while PostgreSQL
  // restarts. Every state it reads with rows and offsets apart is kept in mismatches().
  std::int64_t committed() {
    try {
      if (!conn_ || !conn_->is_open())
        conn_ = std::make_unique<pqxx::connection>(conninfo_);
      pqxx::nontransaction tx(*conn_);
      auto state = read_committed_state(tx);
      for (auto& m : state.mismatches)
        mismatches_.push_back(std::move(m));
      return state.records;
    } catch (const pqxx::sql_error&) {
      return 0; // the first child has not made the tables yet
    } catch (const pqxx::broken_connection&) {
      conn_.reset();
      return -1; // PostgreSQL is restarting
    }
  }
  const std::vector<std::string>& mismatches() const { return mismatches_; }

private:
  std::string conninfo_;
  std::unique_ptr<pqxx::connection> conn_;
  std::vector<std::string> mismatches_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(postgres, *boost::unit_test::precondition(sandboxd::test::postgres_installed))

// The projecting process: "run" projects until killed; "finish" catches up and exits 0.
BOOST_AUTO_TEST_CASE(projecting_child, *utf::disabled()) {
  const char* dir = std::getenv("SANDBOXD_CRASH_LOG_DIR");
  const char* conninfo = std::getenv("SANDBOXD_CRASH_CONNINFO");
  const char* mode = std::getenv("SANDBOXD_CRASH_MODE");
  BOOST_REQUIRE(dir && conninfo && mode);
  events::file_log log(log_options(dir));
  projector p(log, conninfo, child_options());
  if (std::string(mode) == "run") {
    p.start();
    for (;;)
      std::this_thread::sleep_for(1s); // until SIGKILL
  }
  for (int attempt = 0;; ++attempt) {
    try {
      p.catch_up();
      return;
    } catch (const std::exception&) {
      BOOST_REQUIRE(attempt < 100);
      std::this_thread::sleep_for(100ms);
    }
  }
}

BOOST_AUTO_TEST_CASE(sigkilled_projector_and_restarted_postgres_equal_a_rebuild) {
  test::pg_server pg;
  test::temp_dir dir("projection-crash");
  std::string log_dir = dir / "log";
  auto stream = test::mixed_stream(600, 7, 1'700'000'000'000'000'000);
  {
    events::file_log log(log_options(log_dir));
    test::append_all(log, stream);
  }
  ::setenv("SANDBOXD_CRASH_LOG_DIR", log_dir.c_str(), 1);
  ::setenv("SANDBOXD_CRASH_CONNINFO", pg.conninfo().c_str(), 1);

  std::mt19937_64 rng(test::test_seed("test_projection_crash"));
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const auto total = static_cast<std::int64_t>(stream.size());
  progress_probe probe(pg.conninfo());
  auto committed = [&] {
    for (;;) {
      if (auto n = probe.committed(); n >= 0)
        return n;
      std::this_thread::sleep_for(10ms);
    }
  };
  // Waits until the child has committed at least `target` records, or the whole stream
  // (nothing more can come then), or a minute has passed.
  auto wait_progress = [&](std::int64_t target) {
    target = std::min(target, total);
    auto deadline = std::chrono::steady_clock::now() + 60s;
    std::int64_t done = 0;
    while ((done = probe.committed()) < target && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    return done;
  };
  const int rounds = 10;
  int kills_mid_stream = 0;
  int pg_restarts = 0;
  int frozen_kills = 0;
  for (int round = 0; round < rounds; ++round) {
    std::int64_t before = committed();
    // Kill within the first half of this round's share of what is left, so the child's
    // progress between the poll that sees the target and the kill stays short of the end.
    std::int64_t stretch = (total - before) / (2 * (rounds - round));
    std::int64_t target =
      before + 1 + pick(0, static_cast<int>(std::max<std::int64_t>(stretch, 1)));
    pid_t child = spawn_child("run");
    std::int64_t seen = wait_progress(target);
    if (pick(0, 1) == 1) {
      // The child is applying batches back to back: the kill lands inside one.
      pg.kill();
      ++pg_restarts;
      std::this_thread::sleep_for(std::chrono::milliseconds(pick(0, 100)));
      pg.start();
      wait_progress(seen + 1); // reconnected and committing again
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pick(0, 10)));
    if (pick(0, 1) == 1) {
      // Frozen: whatever the child committed so far is all it will commit.
      pqxx::connection c(pg.conninfo());
      pqxx::work tx(c);
      tx.exec("LOCK TABLE live.projection_offsets IN EXCLUSIVE MODE");
      ::kill(child, SIGKILL);
      BOOST_TEST(wait_child(child) == -SIGKILL);
      auto state = read_committed_state(tx);
      BOOST_TEST(state.mismatches.empty(),
                 "round " << round << ", child frozen and killed: " << first_of(state.mismatches));
      tx.commit();
      ++frozen_kills;
    } else {
      ::kill(child, SIGKILL);
      BOOST_TEST(wait_child(child) == -SIGKILL);
    }
    auto done = committed();
    BOOST_TEST_MESSAGE("round " << round << ": " << done << " of " << total << " records");
    if (done > before && done < total)
      ++kills_mid_stream;
  }
  BOOST_TEST(kills_mid_stream >= rounds / 2); // the kills landed while the stream was projected
  BOOST_TEST_MESSAGE(kills_mid_stream << " kills mid-stream (" << frozen_kills << " frozen), "
                                      << pg_restarts << " PostgreSQL restarts");

  BOOST_TEST_REQUIRE(wait_child(spawn_child("finish")) == 0);
  BOOST_TEST(committed() == total);
  // Rows and offsets were never seen apart, polling all along.
  BOOST_TEST(probe.mismatches().empty(), probe.mismatches().size()
                                           << " polls saw rows and offsets apart, the first: "
                                           << first_of(probe.mismatches()));

  events::file_log log(log_options(log_dir));
  auto report = rebuild_and_compare(log, pg.conninfo(), k_schema, "rebuilt");
  for (const auto& d : report.differences)
    BOOST_TEST_MESSAGE(d.table << " only in " << d.side << ": " << d.row);
  BOOST_TEST(report.differences.empty());
  BOOST_TEST(report.rows_compared > static_cast<std::size_t>(total));

  pqxx::connection c(pg.conninfo());
  pqxx::work tx(c);
  BOOST_TEST(tx.exec1("SELECT count(*) FROM live.audit_log")[0].as<std::int64_t>() == total);
  BOOST_TEST(tx.exec1("SELECT count(*) FROM live.billing_intervals")[0].as<std::int64_t>() > 0);
  tx.exec("SET LOCAL search_path TO live");
  BOOST_TEST(verify_audit_log(tx).empty());
}

BOOST_AUTO_TEST_SUITE_END()
