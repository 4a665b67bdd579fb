// read_store — the RPC calls answered from the PostgreSQL read models: list (the
// `sandboxes` read model), bill (projections' billing_report), audit rows and audit
// verification (projections' audit chain).
//
// Every call blocks on PostgreSQL: the server runs them on worker threads, never on its
// event loop. Each call takes a connection from a small pool (made on first use, dropped
// when it breaks); PostgreSQL being unreachable is `unavailable`, a malformed request
// (a page token this store did not make, a period not in whole hours) `invalid_argument`.
// Page tokens are opaque to clients: the keyset position of the last row, hex-encoded; a
// token only moves a cursor, every query is still filtered by the caller's tenant.
#pragma once

#include "api/result.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::api {

struct list_query {
  std::string tenant;
  std::vector<std::string> states; // empty: every state but deleted (unless include_deleted)
  std::vector<events::label> labels;
  bool include_deleted = false;
  std::string page_token;
  std::uint32_t limit = 100;
};

struct sandbox_summary {
  std::string id;
  std::string state;
  std::string template_name;
  events::sandbox_limits limits;
  std::vector<events::label> labels;
  std::string pause_mode;
  std::uint64_t writable_bytes = 0;
  std::int64_t created_at_ns = 0; // microsecond precision (PostgreSQL's timestamptz)
  std::int64_t updated_at_ns = 0;
  std::uint64_t sequence = 0;
};

struct list_page {
  std::vector<sandbox_summary> rows;
  std::string next_page_token; // "" at the end
};

enum class bill_grouping { sandbox, hour, day };

struct bill_line {
  std::string tenant;
  std::string sandbox_id; // "" when grouped by time
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0;
  double compute_gib_seconds = 0;
  double storage_gib_seconds = 0;
  std::int64_t compute_micros = 0;
  std::int64_t storage_micros = 0;
  std::vector<std::string> event_ids;
};

struct bill_report {
  std::vector<bill_line> lines;
  std::int64_t total_compute_micros = 0;
  std::int64_t total_storage_micros = 0;
  std::int64_t total_micros = 0;
};

struct audit_query {
  std::string tenant;
  std::string sandbox_id;
  std::int64_t from_ns = 0;
  std::int64_t to_ns = 0; // 0: no bound
  std::string page_token;
  std::uint32_t limit = 100;
};

struct audit_entry {
  std::string tenant;
  std::int32_t partition = 0;
  std::int64_t position = 0;
  std::string event_id;
  std::string sandbox_id;
  std::int64_t occurred_at_ns = 0;
  std::string principal;
  std::string action;
  std::string outcome;
  std::string detail;
  std::string hash; // 32 bytes
};

struct audit_page {
  std::vector<audit_entry> rows;
  std::string next_page_token;
};

struct audit_problem {
  std::string tenant;
  std::int32_t partition = 0;
  std::int64_t position = 0;
  std::string event_id;
  std::string kind;
  std::string message;
};

struct audit_check {
  std::uint64_t checked_rows = 0;
  std::vector<audit_problem> problems;
};

class read_store {
public:
  // `schema`: where the read models live (the projector's schema).
  read_store(std::string conninfo, std::string schema = "public");
  ~read_store();
  read_store(const read_store&) = delete;
  read_store& operator=(const read_store&) = delete;

  result<list_page> list(const list_query& q);
  result<bill_report> bill(const std::string& tenant, std::int64_t from_ns, std::int64_t to_ns,
                           bill_grouping by);
  result<audit_page> audit(const audit_query& q);
  result<audit_check> verify(const std::string& tenant);

  // The most rows one page returns.
  static constexpr std::uint32_t k_max_page = 1000;

private:
  struct pool; // idle pqxx connections, kept out of this header
  template <class T, class F>
  result<T> with_connection(const char* what, F&& f);

  std::string conninfo_;
  std::string schema_;
  std::unique_ptr<pool> pool_;
};

} // namespace sandboxd::api
