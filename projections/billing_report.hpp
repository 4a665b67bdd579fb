// billing_report — a tenant's bill for a period, from the billing read model.
//
// A period is whole hours [from_ms, to_ms) (the meters are kept per hour). One line per
// sandbox with usage in the period: its compute and storage usage (byte-milliseconds),
// each priced on its own (billing.hpp: rounded half up per line and meter), and the ids of
// the events that opened and closed every metering interval that touches the period — the
// trail from a line back to the log. The total is the sum of the rounded line amounts.
// Intervals still open (a sandbox running now) are billed once the event that closes them
// is projected.
#pragma once

#include "events/errc.hpp"
#include "projections/billing.hpp"

#include <optional>
#include <string>
#include <vector>

namespace pqxx {
class transaction_base;
}

namespace sandboxd::projections {

struct bill_line {
  std::string sandbox_id;
  usage_t compute_byte_ms = 0;
  usage_t storage_byte_ms = 0;
  std::int64_t compute_micro_usd = 0;
  std::int64_t storage_micro_usd = 0;
  std::vector<std::string> event_ids; // "<sandbox>:<seq>", ascending by sequence
};

struct bill {
  std::string tenant;
  std::int64_t from_ms = 0;
  std::int64_t to_ms = 0;
  std::vector<bill_line> lines; // by sandbox id
  std::int64_t total_micro_usd = 0;
};

struct bill_result {
  std::optional<bill> value;
  std::optional<events::error> failure; // invalid_argument for a period not in whole hours
};

bill_result billing_report(pqxx::transaction_base& tx, const std::string& tenant,
                           std::int64_t from_ms, std::int64_t to_ms,
                           const billing_rates& rates = {});

} // namespace sandboxd::projections
