#include "projections/migrations.hpp"

#include "base/sha256.hpp"

#include <pqxx/pqxx>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#ifndef SANDBOXD_MIGRATIONS_DIR
#error "SANDBOXD_MIGRATIONS_DIR must name the migrations directory"
#endif

namespace sandboxd::projections {

namespace fs = std::filesystem;

std::string default_migrations_dir() {
  return SANDBOXD_MIGRATIONS_DIR;
}

std::vector<migration> load_migrations(const std::string& dir) {
  static const std::regex file_name(R"(^([0-9]{4})_([a-z0-9_]+)\.sql$)");
  std::vector<migration> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec)
    throw migration_error("cannot read the migrations directory " + dir + ": " + ec.message());
  for (const auto& entry : it) {
    std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".sql")
      continue;
    std::smatch m;
    if (!std::regex_match(file, m, file_name))
      throw migration_error("migration file " + dir + "/" + file +
                            " is not named NNNN_name.sql; rename it");
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    migration mig;
    mig.version = std::stoi(m[1].str());
    mig.name = m[2].str();
    mig.sql = ss.str();
    mig.checksum = sha256_hex(mig.sql);
    out.push_back(std::move(mig));
  }
  std::sort(out.begin(), out.end(),
            [](const migration& a, const migration& b) { return a.version < b.version; });
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i].version == out[i - 1].version)
      throw migration_error("migrations " + out[i - 1].name + " and " + out[i].name +
                            " share version " + std::to_string(out[i].version) +
                            "; give one of them a new number");
  return out;
}

namespace {

std::string set_path(pqxx::transaction_base& tx, const std::string& schema) {
  return "SET LOCAL search_path TO " + tx.quote_name(schema);
}

} // namespace

migration_outcome apply_migrations(pqxx::connection_base& conn, const std::string& schema,
                                   const std::string& dir) {
  auto wanted = load_migrations(dir);
  {
    pqxx::nontransaction nt(conn);
    // The lock first: CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent one
    // (both see no schema; the second fails on the catalog's unique index).
    nt.exec("SELECT pg_advisory_lock(hashtext(" + nt.quote("sandboxd.migrations." + schema) + "))");
    nt.exec("CREATE SCHEMA IF NOT EXISTS " + nt.quote_name(schema));
  }
  struct unlock {
    pqxx::connection_base& c;
    std::string schema;
    ~unlock() {
      try {
        pqxx::nontransaction nt(c);
        nt.exec("SELECT pg_advisory_unlock(hashtext(" + nt.quote("sandboxd.migrations." + schema) +
                "))");
      } catch (...) {
        // A lost connection released the lock already.
      }
    }
  } guard{conn, schema};

  std::map<int, std::pair<std::string, std::string>> applied; // version → (name, checksum)
  {
    pqxx::work tx(conn);
    tx.exec(set_path(tx, schema));
    tx.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())");
    for (const auto& row : tx.exec("SELECT version, name, checksum FROM schema_migrations"))
      applied[row[0].as<int>()] = {row[1].as<std::string>(), row[2].as<std::string>()};
    tx.commit();
  }

  for (const auto& [version, rec] : applied) {
    auto it = std::find_if(wanted.begin(), wanted.end(),
                           [v = version](const migration& m) { return m.version == v; });
    std::string label = std::to_string(version) + "_" + rec.first;
    if (it == wanted.end())
      throw migration_error("schema " + schema + " has migration " + label + " applied, but " +
                            dir + " does not have it; run the sandboxd release that has it");
    if (it->checksum != rec.second)
      throw migration_error("migration " + label + " was edited after it was applied to schema " +
                            schema + " (checksum " + rec.second.substr(0, 12) + " applied, " +
                            it->checksum.substr(0, 12) +
                            " on disk); restore the file and add a new migration instead");
  }

  migration_outcome outcome;
  for (const auto& m : wanted) {
    if (applied.count(m.version))
      continue;
    pqxx::work tx(conn);
    tx.exec(set_path(tx, schema));
    try {
      tx.exec(m.sql);
    } catch (const pqxx::sql_error& e) {
      throw migration_error("migration " + std::to_string(m.version) + "_" + m.name +
                            " failed on schema " + schema + ": " + e.what());
    }
    tx.exec_params("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                   m.version, m.name, m.checksum);
    tx.commit();
    outcome.applied.push_back(m.version);
  }
  outcome.current_version = wanted.empty() ? 0 : wanted.back().version;
  if (!applied.empty())
    outcome.current_version = std::max(outcome.current_version, applied.rbegin()->first);
  return outcome;
}

} // namespace sandboxd::projections
