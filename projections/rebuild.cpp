#include "projections/rebuild.hpp"

#include "projections/projector.hpp"

#include <pqxx/pqxx>

namespace sandboxd::projections {

const std::vector<std::string>& read_model_tables() {
  static const std::vector<std::string> tables{
    "sandboxes", "billing_meter_state", "billing_intervals",     "billing_hourly",
    "audit_log", "audit_chain_heads",   "projection_sandbox_seq"};
  return tables;
}

rebuild_report compare_schemas(const std::string& conninfo, const std::string& live_schema,
                               const std::string& fresh_schema) {
  rebuild_report report;
  pqxx::connection c(conninfo);
  pqxx::work tx(c);
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
  return report;
}

rebuild_report rebuild_and_compare(events::event_log& log, const std::string& conninfo,
                                   const std::string& live_schema, const std::string& fresh_schema,
                                   const std::string& name) {
  projector_options options;
  options.name = name;
  options.schema = fresh_schema;
  {
    pqxx::connection c(conninfo);
    pqxx::work tx(c);
    tx.exec("DROP SCHEMA IF EXISTS " + tx.quote_name(fresh_schema) + " CASCADE");
    for (const auto& row :
         tx.exec_params("SELECT partition, next_offset FROM " + tx.quote_name(live_schema) +
                          ".projection_offsets WHERE projection = $1",
                        name))
      options.until[row[0].as<std::int32_t>()] = row[1].as<std::int64_t>();
    tx.commit();
  }
  for (std::int32_t p = 0; p < log.partitions(); ++p)
    options.until.emplace(p, 0); // a partition the live side never started: nothing
  {
    projector fresh(log, conninfo, options);
    fresh.catch_up();
  }
  return compare_schemas(conninfo, live_schema, fresh_schema);
}

} // namespace sandboxd::projections
