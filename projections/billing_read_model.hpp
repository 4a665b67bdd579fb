// billing_read_model — the billing meters' tables (docs/billing.md): billing_meter_state (what
// each sandbox is being metered for now), billing_intervals (every closed interval, with the
// events that opened and closed it) and billing_hourly (usage per sandbox and hour).
//
// A batch moves each sandbox's meters through its events (billing_meter.hpp), appends the
// intervals they close (COPY) and adds their usage, split by hour, to billing_hourly. It
// remembers per sandbox the meter state and the latest hour that has a billing_hourly row, as
// they are once the batch commits, so that a batch knows which rows exist: new meter rows are
// inserted and existing ones updated (unchanged ones not written), and an hour after the
// sandbox's latest one is a plain insert while the others may have a row (an upsert that adds
// to it). Were that memory ever wrong, an insert would fail on the primary key — a fault: the
// step rolls back, everything is forgotten and read again.
//
// A tenant's template has a meter row of its own, keyed by the template's id (billing_meter.hpp):
// the template stream's events are split by template before they are metered.
#pragma once

#include "projections/billing_meter.hpp"
#include "projections/pg_array.hpp"
#include "projections/read_model.hpp"

#include <optional>
#include <unordered_map>

namespace sandboxd::projections {

class billing_read_model : public read_model {
public:
  std::vector<std::string> tables() const override {
    return {"billing_meter_state", "billing_intervals", "billing_hourly"};
  }
  void recall(pqxx::transaction_base& tx, const fresh_batch& batch) override;
  void compute(const fresh_batch& batch) override;
  void write(pqxx::transaction_base& tx) override;
  void forget() override;

private:
  struct sandbox_meters {
    std::optional<meter_state> meter;      // empty: no billing_meter_state row
    std::optional<std::int64_t> last_hour; // the latest hour_ms with a billing_hourly row
  };
  // billing_meter_state rows as unnest arrays.
  struct meter_columns {
    pg_array id, tenant, memory, compute_seq, compute_ms, storage_bytes, storage_seq, storage_ms,
      deleted;
    void add(const meter_state& s);
  };
  // billing_hourly rows as unnest arrays.
  struct hour_columns {
    pg_array id, hour, tenant, compute, storage;
    void add(const std::string& sandbox, std::int64_t h, const std::string& t, std::int64_t c,
             std::int64_t s);
  };
  // A batch's writes: meter rows to insert and to update, closed intervals (COPY text), hours
  // new after the sandbox's latest one and hours that may have a row.
  struct batch_rows {
    meter_columns inserts, updates;
    hour_columns fresh_hours, maybe_hours;
    std::string intervals;
  };
  void add_hours(const std::vector<closed_interval>& closed, std::size_t first,
                 std::optional<std::int64_t>& last_hour);
  void add_intervals(const std::vector<closed_interval>& closed);

  std::unordered_map<std::string, sandbox_meters> sandboxes_;
  batch_rows rows_;
};

} // namespace sandboxd::projections
