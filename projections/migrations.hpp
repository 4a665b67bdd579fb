// migrations — the forward-only schema migrations of the read models.
//
// A migration is a file `NNNN_name.sql` in the migrations directory (SANDBOXD_MIGRATIONS_DIR
// by default). apply_migrations() applies the ones not yet applied in version order, each in
// its own transaction together with its row in `schema_migrations` (version, name, SHA-256
// of the file, applied_at). Before applying anything it checks every applied row against the
// directory: an applied migration whose file changed, or one that the directory does not
// have, stops start-up with a migration_error that names the version and says what to do.
// Concurrent callers on one schema are serialised by an advisory lock.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace pqxx {
class connection_base;
}

namespace sandboxd::projections {

struct migration {
  int version = 0;
  std::string name;     // file name without the `NNNN_` prefix and `.sql`
  std::string sql;      // file contents
  std::string checksum; // SHA-256 of `sql`, hex
};

// The directory's migrations in version order. Throws migration_error for a file name that
// is not `NNNN_name.sql` or for two files with one version.
std::vector<migration> load_migrations(const std::string& dir);

// The migrations directory compiled into the library.
std::string default_migrations_dir();

class migration_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct migration_outcome {
  std::vector<int> applied; // versions applied by this call, in order
  int current_version = 0;  // highest applied version afterwards
};

// Applies the pending migrations of `dir` to `schema` (created if missing). Throws
// migration_error when an applied migration was edited or is unknown to `dir`, or when a
// migration's SQL fails (nothing of that migration is kept); pqxx errors for lost
// connections.
migration_outcome apply_migrations(pqxx::connection_base& conn, const std::string& schema,
                                   const std::string& dir = default_migrations_dir());

} // namespace sandboxd::projections
