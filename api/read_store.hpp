// read_store — the RPC calls answered from the PostgreSQL read models: list (the
// `sandboxes` read model), bill (projections' billing_report), audit rows and audit
// verification (projections' audit chain), and the verification of the read models against
// the log (projections' rebuild_and_compare, into the scratch schema "<schema>_verify").
//
// Every call blocks on PostgreSQL: the server runs them on worker threads, never on its
// event loop. Each call takes a connection from a small pool (made on first use, dropped
// when it breaks); PostgreSQL being unreachable is `unavailable`, a malformed request
// (a page token this store did not make, a period not in whole hours) `invalid_argument`.
// Page tokens are opaque to clients: the keyset position of the last row, hex-encoded; a
// token only moves a cursor, every query is still filtered by the caller's tenant.
#pragma once

#include "api/records.hpp"
#include "api/result.hpp"
#include "events/event_log.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sandboxd::api {

class read_store {
public:
  // `schema`: where the read models live (the projector's schema).
  read_store(std::string conninfo, std::string schema = "public");
  ~read_store();
  read_store(const read_store&) = delete;
  read_store& operator=(const read_store&) = delete;

  // The tenant's sandboxes, newest first.
  result<list_page> list(const std::string& tenant, const list_filter& q);
  result<bill_report> bill(const std::string& tenant, std::int64_t from_ns, std::int64_t to_ns,
                           bill_grouping by);
  result<audit_page> audit(const audit_query& q);
  result<audit_check> verify(const std::string& tenant);
  // Rebuilds projection `name` from offset zero of `log` into "<schema>_verify" and compares
  // it with the live read models in one snapshot. not_found for a projection this daemon
  // does not run; unavailable when PostgreSQL fails; internal when the log cannot be read.
  result<projection_check> verify_projection(events::event_log& log, const std::string& name);

  // Every projection's offsets against the log's end offsets, with the lag (projections'
  // projection_status). unavailable when PostgreSQL fails; internal when the log cannot be
  // read.
  result<std::vector<projection_partition>> projection_status(events::event_log& log);
  // Rebuilds projection `name` into "<schema>_rebuild" and replaces the live read models'
  // rows with it in one transaction (projections' rebuild_and_replace) while the projector
  // keeps running. not_found, unavailable, internal as verify_projection.
  result<projection_rebuild> rebuild_projection(events::event_log& log, const std::string& name);

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
