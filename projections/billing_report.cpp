#include "projections/billing_report.hpp"

#include "projections/billing_meter.hpp"
#include "projections/pg_array.hpp"

#include <pqxx/pqxx>

#include <map>
#include <set>

namespace sandboxd::projections {

bill_result billing_report(pqxx::transaction_base& tx, const std::string& tenant,
                           std::int64_t from_ms, std::int64_t to_ms, const billing_rates& rates) {
  if (from_ms % ms_per_hour != 0 || to_ms % ms_per_hour != 0 || to_ms <= from_ms)
    return {std::nullopt,
            events::make_error(
              events::errc::invalid_argument,
              "billing period [" + std::to_string(from_ms) + ", " + std::to_string(to_ms) +
                ") ms is not a non-empty range of whole hours; round it to hours")};
  bill b;
  b.tenant = tenant;
  b.from_ms = from_ms;
  b.to_ms = to_ms;
  std::map<std::string, bill_line> lines;
  for (const auto& f : tx.exec_params("SELECT sandbox_id, sum(compute_byte_ms)::text,"
                                      " sum(storage_byte_ms)::text FROM billing_hourly"
                                      " WHERE tenant = $1 AND hour_ms >= $2 AND hour_ms < $3"
                                      " GROUP BY sandbox_id",
                                      tenant, from_ms, to_ms)) {
    auto& l = lines[f[0].as<std::string>()];
    l.sandbox_id = f[0].as<std::string>();
    l.compute_byte_ms = parse_usage(f[1].as<std::string>());
    l.storage_byte_ms = parse_usage(f[2].as<std::string>());
  }
  // The intervals touching the period of the sandboxes billed (those with hourly rows in
  // it), through billing_intervals' primary key (migration 0006).
  pg_array billed;
  for (const auto& [id, l] : lines)
    billed.add(id);
  std::map<std::string, std::set<std::uint64_t>> seqs;
  for (const auto& f : tx.exec_params("SELECT i.sandbox_id, i.start_seq, i.end_seq"
                                      " FROM unnest($4::text[]) AS b(id)"
                                      " JOIN billing_intervals i ON i.sandbox_id = b.id"
                                      " WHERE i.tenant = $1 AND i.start_ms < $3 AND i.end_ms > $2",
                                      tenant, from_ms, to_ms, billed.str())) {
    auto& s = seqs[f[0].as<std::string>()];
    s.insert(f[1].as<std::uint64_t>());
    s.insert(f[2].as<std::uint64_t>());
  }
  for (auto& [id, l] : lines) {
    l.compute_micro_usd = price_compute(l.compute_byte_ms, rates);
    l.storage_micro_usd = price_storage(l.storage_byte_ms, rates);
    for (auto seq : seqs[id])
      l.event_ids.push_back(meter_event_id(id, seq));
    b.total_micro_usd += l.compute_micro_usd + l.storage_micro_usd;
    b.lines.push_back(std::move(l));
  }
  return {std::move(b), std::nullopt};
}

} // namespace sandboxd::projections
