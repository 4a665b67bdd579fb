// The migrations runner against a real PostgreSQL: applies in order once, records
// checksums, and refuses to start on an edited or unknown applied migration.
#define BOOST_TEST_MODULE migrations
#include <boost/test/unit_test.hpp>

#include "projections/audit_chain.hpp"
#include "projections/audit_log.hpp"
#include "projections/migrations.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/temp_dir.hpp"

#include <pqxx/pqxx>

#include <filesystem>
#include <fstream>
#include <future>
#include <vector>

using namespace sandboxd::projections;
using sandboxd::test::pg_server;
using sandboxd::test::temp_dir;

namespace {

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string error_of(pqxx::connection& c, const std::string& schema, const std::string& dir) {
  try {
    apply_migrations(c, schema, dir);
  } catch (const migration_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(postgres, *boost::unit_test::precondition(sandboxd::test::postgres_installed))

BOOST_AUTO_TEST_CASE(repository_migrations_apply_once_and_create_the_read_models) {
  pqxx::connection c(pg_server::shared().conninfo());
  auto first = apply_migrations(c, "live_repo");
  BOOST_TEST(!first.applied.empty());
  BOOST_TEST(first.applied.front() == 1);
  auto second = apply_migrations(c, "live_repo");
  BOOST_TEST(second.applied.empty());
  BOOST_TEST(second.current_version == first.current_version);
  pqxx::work w(c);
  for (const char* table : {"projection_offsets", "sandboxes", "billing_hourly", "audit_log"})
    BOOST_TEST(w.exec_params1("SELECT count(*) FROM information_schema.tables "
                              "WHERE table_schema = 'live_repo' AND table_name = $1",
                              std::string(table))[0]
                   .as<int>() == 1,
               table);
}

BOOST_AUTO_TEST_CASE(hex_audit_hashes_become_bytes_and_the_chains_still_verify) {
  // A schema projected before 0005 holds the hashes as hex text; 0005 converts them in
  // place, and verification (which reads them back as hex) finds the chain intact.
  temp_dir old_dir("migrations-0004");
  for (const auto& entry : std::filesystem::directory_iterator(default_migrations_dir()))
    if (entry.path().filename().string() < "0005")
      std::filesystem::copy_file(entry.path(), old_dir / entry.path().filename().string());
  pqxx::connection c(pg_server::shared().conninfo());
  BOOST_TEST(apply_migrations(c, "before_0005", old_dir.path()).current_version == 4);
  std::vector<audit_row> rows;
  std::string prev = audit_genesis_hash();
  for (int i = 1; i <= 3; ++i) {
    audit_row r;
    r.tenant = "t1";
    r.partition = 2;
    r.position = i;
    r.event_id = "e" + std::to_string(i);
    r.occurred_at_ns = 1000 * i;
    r.principal = "alice";
    r.action = "exec_started";
    r.sandbox_id = "sb_1";
    r.outcome = "accepted";
    r.detail = "x" + std::to_string(i) + ": ls";
    r.hash_version = 1; // rows stored before 0008 hash the detail's text
    link(r, prev);
    prev = r.hash;
    rows.push_back(r);
  }
  {
    pqxx::work w(c);
    w.exec("SET LOCAL search_path TO before_0005");
    for (const auto& r : rows)
      w.exec_params("INSERT INTO audit_log VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,"
                    " $12)",
                    r.tenant, r.partition, r.position, r.event_id, r.occurred_at_ns, r.principal,
                    r.action, r.sandbox_id, r.outcome, r.detail, r.prev_hash, r.hash);
    w.exec_params("INSERT INTO audit_chain_heads VALUES ('t1', 2, 3, $1)", prev);
    w.commit();
  }
  BOOST_TEST(apply_migrations(c, "before_0005").applied.front() == 5);
  pqxx::work w(c);
  w.exec("SET LOCAL search_path TO before_0005");
  BOOST_TEST(w.exec1("SELECT octet_length(hash) FROM audit_chain_heads")[0].as<int>() == 32);
  BOOST_TEST(
    w.exec1("SELECT encode(hash, 'hex') FROM audit_log WHERE position = 2")[0].as<std::string>() ==
    rows[1].hash);
  BOOST_TEST(verify_audit_log(w).empty());
  // The converted rows are what the projector now writes: an edit is still found.
  w.exec("UPDATE audit_log SET detail = 'x2: rm' WHERE position = 2");
  auto findings = verify_audit_log(w);
  BOOST_TEST_REQUIRE(findings.size() == 1u);
  BOOST_TEST(to_string(findings[0].problem) == "hash_mismatch");
}

BOOST_AUTO_TEST_CASE(concurrent_starters_on_a_new_schema_apply_every_migration_once) {
  // Projectors of one projection start together: each applies the migrations to the same
  // schema, which none of them has made yet.
  for (int round = 0; round < 5; ++round) {
    const std::string schema = "together_" + std::to_string(round);
    std::vector<std::future<migration_outcome>> starters;
    for (int i = 0; i < 4; ++i)
      starters.push_back(std::async(std::launch::async, [&] {
        pqxx::connection c(pg_server::shared().conninfo());
        return apply_migrations(c, schema);
      }));
    std::size_t applied = 0;
    for (auto& s : starters)
      applied += s.get().applied.size(); // rethrows a starter's failure
    pqxx::connection c(pg_server::shared().conninfo());
    pqxx::work w(c);
    const auto recorded =
      w.exec1("SELECT count(*) FROM " + w.quote_name(schema) + ".schema_migrations")[0]
        .as<std::size_t>();
    BOOST_TEST(applied == recorded);
    BOOST_TEST(recorded > 0u);
  }
}

BOOST_AUTO_TEST_CASE(migrations_apply_in_version_order_with_checksums) {
  temp_dir dir("migrations");
  write(dir / "0002_second.sql", "INSERT INTO trail VALUES ('second');");
  write(dir / "0001_first.sql",
        "CREATE TABLE trail (what text); INSERT INTO trail VALUES ('first');");
  pqxx::connection c(pg_server::shared().conninfo());
  auto out = apply_migrations(c, "ordered", dir.path());
  BOOST_TEST((out.applied == std::vector<int>{1, 2}));
  pqxx::work w(c);
  auto rows = w.exec("SELECT what FROM ordered.trail");
  BOOST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0][0].as<std::string>() == "first");
  BOOST_TEST(rows[1][0].as<std::string>() == "second");
  auto sums = w.exec("SELECT version, checksum FROM ordered.schema_migrations ORDER BY version");
  BOOST_TEST(sums[0][1].as<std::string>() == load_migrations(dir.path())[0].checksum);
}

BOOST_AUTO_TEST_CASE(edited_applied_migration_stops_start_up) {
  temp_dir dir("migrations");
  write(dir / "0001_first.sql", "CREATE TABLE t (v int);");
  pqxx::connection c(pg_server::shared().conninfo());
  apply_migrations(c, "edited", dir.path());
  write(dir / "0001_first.sql", "CREATE TABLE t (v bigint);");
  write(dir / "0002_second.sql", "CREATE TABLE u (v int);");
  std::string err = error_of(c, "edited", dir.path());
  BOOST_TEST(err.find("migration 1_first was edited") != std::string::npos, err);
  BOOST_TEST(err.find("add a new migration") != std::string::npos, err);
  // Nothing after the edited one was applied.
  pqxx::work w(c);
  BOOST_TEST(w.exec1("SELECT count(*) FROM edited.schema_migrations")[0].as<int>() == 1);
}

BOOST_AUTO_TEST_CASE(unknown_applied_migration_stops_start_up) {
  temp_dir dir("migrations");
  write(dir / "0001_first.sql", "CREATE TABLE t (v int);");
  write(dir / "0002_second.sql", "CREATE TABLE u (v int);");
  pqxx::connection c(pg_server::shared().conninfo());
  apply_migrations(c, "unknown", dir.path());
  std::remove((dir / "0002_second.sql").c_str());
  std::string err = error_of(c, "unknown", dir.path());
  BOOST_TEST(err.find("2_second applied") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(failing_migration_keeps_nothing_of_itself) {
  temp_dir dir("migrations");
  write(dir / "0001_first.sql", "CREATE TABLE t (v int);");
  write(dir / "0002_broken.sql", "CREATE TABLE u (v int); SELECT no_such_function();");
  pqxx::connection c(pg_server::shared().conninfo());
  std::string err = error_of(c, "broken", dir.path());
  BOOST_TEST(err.find("migration 2_broken failed") != std::string::npos, err);
  pqxx::work w(c);
  BOOST_TEST(w.exec1("SELECT count(*) FROM broken.schema_migrations")[0].as<int>() == 1);
  BOOST_TEST(w.exec1("SELECT to_regclass('broken.u') IS NULL")[0].as<bool>());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(badly_named_file_is_rejected) {
  temp_dir dir("migrations");
  write(dir / "1_first.sql", "SELECT 1;");
  BOOST_CHECK_THROW(load_migrations(dir.path()), migration_error);
}
