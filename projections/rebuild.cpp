#include "projections/rebuild.hpp"

#include "projections/log_batch.hpp"
#include "projections/migrations.hpp"
#include "projections/pg_array.hpp"
#include "projections/projector.hpp"
#include "projections/read_models.hpp"

#include <pqxx/pqxx>

#include <chrono>
#include <stdexcept>

namespace sandboxd::projections {

namespace {

using snapshot_transaction = pqxx::transaction<pqxx::repeatable_read>;

// Adds the differences between the two schemas' read-model tables, as `tx` sees them.
void compare(pqxx::transaction_base& tx, const std::string& live_schema,
             const std::string& fresh_schema, rebuild_report& report) {
  for (const auto& table : read_model_tables()) {
    std::string live = tx.quote_name(live_schema) + "." + tx.quote_name(table);
    std::string fresh = tx.quote_name(fresh_schema) + "." + tx.quote_name(table);
    report.rows_compared += tx.exec1("SELECT count(*) FROM " + live)[0].as<std::size_t>();
    auto one_way = [&](const std::string& a, const std::string& b, const char* side) {
      for (const auto& row : tx.exec("SELECT row_to_json(d)::text FROM (SELECT * FROM " + a +
                                     " EXCEPT ALL SELECT * FROM " + b + ") d"))
        report.differences.push_back({table, side, row[0].as<std::string>()});
    };
    one_way(live, fresh, "live");
    one_way(fresh, live, "rebuild");
  }
}

// Applies the log's records below `until` (every partition from offset zero) to the read
// models in tx's search_path, batch after batch, in the caller's transaction.
void replay(pqxx::transaction_base& tx, events::event_log& log, const std::string& name,
            const partition_offsets& until) {
  partition_offsets at;
  for (auto [p, u] : until) {
    auto end = log.end_offset(p);
    if (!end.ok())
      throw std::runtime_error("rebuild of projection " + name + ": end offset of partition " +
                               std::to_string(p) + " of " + log.describe() +
                               " unknown: " + end.failure->message);
    if (end.offset < u)
      throw std::runtime_error("rebuild of projection " + name + ": partition " +
                               std::to_string(p) + " of " + log.describe() + " ends at offset " +
                               std::to_string(end.offset) + " but the live projection is at " +
                               std::to_string(u) +
                               "; it was projected from another log, rebuild it from that one");
    at[p] = 0;
  }
  const std::size_t max_batch = projector_options{}.max_batch;
  read_models models(name); // what they remember is what this transaction wrote
  for (;;) {
    partition_offsets from;
    for (auto [p, o] : at)
      if (o < until.at(p))
        from[p] = o;
    if (from.empty())
      return;
    auto batch = read_log_batch(log, name, from, until, max_batch);
    if (batch.events.empty()) {
      // The end offsets promised records that a read did not return yet (Kafka).
      log.wait_for(from.begin()->first, from.begin()->second, std::chrono::milliseconds(20));
      continue;
    }
    models.apply(tx, batch.events);
    models.bound();
    for (auto [p, o] : batch.moved)
      at[p] = o;
  }
}

} // namespace

const std::vector<std::string>& read_model_tables() {
  static const std::vector<std::string> tables = read_models::tables();
  return tables;
}

rebuild_report compare_schemas(const std::string& conninfo, const std::string& live_schema,
                               const std::string& fresh_schema) {
  rebuild_report report;
  pqxx::connection c(conninfo);
  snapshot_transaction tx(c);
  compare(tx, live_schema, fresh_schema, report);
  return report;
}

rebuild_report rebuild_and_compare(events::event_log& log, const std::string& conninfo,
                                   const std::string& live_schema, const std::string& fresh_schema,
                                   const std::string& name) {
  rebuild_report report;
  pqxx::connection c(conninfo);
  {
    pqxx::work tx(c);
    tx.exec("DROP SCHEMA IF EXISTS " + tx.quote_name(fresh_schema) + " CASCADE");
    tx.commit();
  }
  apply_migrations(c, fresh_schema); // committed before the snapshot, so its tables are in it

  snapshot_transaction tx(c);
  // The first statement takes the snapshot: the live offsets and, below, the live rows.
  for (const auto& row :
       tx.exec_params("SELECT partition, next_offset FROM " + tx.quote_name(live_schema) +
                        ".projection_offsets WHERE projection = $1",
                      name))
    report.offsets[row[0].as<std::int32_t>()] = row[1].as<std::int64_t>();
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    report.offsets.emplace(p, 0); // a partition the live side never started: nothing

  tx.exec("SET LOCAL search_path TO " + tx.quote_name(fresh_schema));
  replay(tx, log, name, report.offsets);
  // The fresh schema is a projection at those offsets, which a projector could continue.
  pg_array parts, offsets;
  for (auto [p, o] : report.offsets) {
    parts.add(p);
    offsets.add(o);
  }
  tx.exec_params("INSERT INTO projection_offsets (projection, partition, next_offset)"
                 " SELECT $1, p, o FROM unnest($2::integer[], $3::bigint[]) AS u(p, o)",
                 name, parts.str(), offsets.str());
  compare(tx, live_schema, fresh_schema, report);
  tx.commit();
  return report;
}

} // namespace sandboxd::projections
