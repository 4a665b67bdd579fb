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

// Applies the log's records from `from` (offset zero for a partition it lacks) up to `until`
// to the read models in tx's search_path, batch after batch, in the caller's transaction.
void replay(pqxx::transaction_base& tx, events::event_log& log, const std::string& name,
            const partition_offsets& until, const partition_offsets& from_offsets = {}) {
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
    auto f = from_offsets.find(p);
    at[p] = f == from_offsets.end() ? 0 : f->second;
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

namespace sandboxd::projections {

namespace {

partition_offsets read_offsets(pqxx::transaction_base& tx, const std::string& schema,
                               const std::string& name, bool lock) {
  partition_offsets out;
  for (const auto& row :
       tx.exec_params("SELECT partition, next_offset FROM " + tx.quote_name(schema) +
                        ".projection_offsets WHERE projection = $1" +
                        (lock ? " ORDER BY partition FOR UPDATE" : ""),
                      name))
    out[row[0].as<std::int32_t>()] = row[1].as<std::int64_t>();
  return out;
}

// `at` with every partition of `log` (0 where it has none).
partition_offsets every_partition(partition_offsets at, const events::event_log& log) {
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    at.emplace(p, 0);
  return at;
}

std::int64_t distance(const partition_offsets& from, const partition_offsets& to) {
  std::int64_t n = 0;
  for (auto [p, o] : to) {
    auto f = from.find(p);
    n += o - (f == from.end() ? 0 : f->second);
  }
  return n;
}

} // namespace

replace_report rebuild_and_replace(events::event_log& log, const std::string& conninfo,
                                   const std::string& live_schema,
                                   const std::string& scratch_schema, const std::string& name) {
  replace_report report;
  pqxx::connection c(conninfo);
  {
    pqxx::work tx(c);
    tx.exec("DROP SCHEMA IF EXISTS " + tx.quote_name(scratch_schema) + " CASCADE");
    tx.commit();
  }
  // The bulk of the work, outside any lock: the scratch schema projected up to where the
  // live projection stands, again until what is left is small.
  partition_offsets built;
  for (int round = 0; round < k_max_catch_up_rounds; ++round) {
    partition_offsets live;
    {
      pqxx::read_transaction tx(c);
      live = every_partition(read_offsets(tx, live_schema, name, false), log);
    }
    const auto left = distance(built, live);
    if (round > 0 && left <= static_cast<std::int64_t>(k_switch_within))
      break;
    projector_options o;
    o.name = name;
    o.schema = scratch_schema;
    o.until = live;
    projector(log, conninfo, o).catch_up();
    built = live;
    ++report.catch_up_rounds;
  }

  // The switch: the live offsets locked (the live projector waits), the scratch schema
  // brought to exactly them, the live rows replaced, all in one transaction.
  pqxx::work tx(c);
  report.offsets = every_partition(read_offsets(tx, live_schema, name, true), log);
  const auto scratch_at = read_offsets(tx, scratch_schema, name, false);
  for (auto [p, o] : scratch_at)
    if (o > report.offsets[p])
      throw std::runtime_error("rebuild of projection " + name + ": the scratch schema is at " +
                               std::to_string(o) + " in partition " + std::to_string(p) +
                               ", past the live projection's " + std::to_string(report.offsets[p]) +
                               "; rebuild again");
  tx.exec("SET LOCAL search_path TO " + tx.quote_name(scratch_schema));
  replay(tx, log, name, report.offsets, scratch_at);
  for (const auto& table : read_model_tables()) {
    const std::string live = tx.quote_name(live_schema) + "." + tx.quote_name(table);
    const std::string fresh = tx.quote_name(scratch_schema) + "." + tx.quote_name(table);
    // The stored columns: a generated one is computed again from them.
    std::string columns;
    for (const auto& row : tx.exec_params("SELECT column_name FROM information_schema.columns"
                                          " WHERE table_schema = $1 AND table_name = $2"
                                          " AND is_generated = 'NEVER' ORDER BY ordinal_position",
                                          live_schema, table))
      columns += (columns.empty() ? "" : ", ") + tx.quote_name(row[0].as<std::string>());
    tx.exec("DELETE FROM " + live);
    report.rows_replaced +=
      tx.exec("INSERT INTO " + live + " (" + columns + ") SELECT " + columns + " FROM " + fresh)
        .affected_rows();
  }
  tx.exec("DROP SCHEMA " + tx.quote_name(scratch_schema) + " CASCADE");
  tx.commit();
  return report;
}

} // namespace sandboxd::projections
