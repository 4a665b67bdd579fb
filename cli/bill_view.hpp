// bill_view — a bill as sandboxctl shows it (`bill`): one line per sandbox (or per hour or
// day), compute and storage quantities, amounts in dollars to the micro-dollar, a total.
//
// Quantities are shown in the units the prices are in: compute in GiB-hours (memory GiB x
// hours running), storage in GiB-months (writable-layer GiB x hours kept / 730). Amounts
// come from the daemon in integer micro-dollars and are printed exactly ("$0.600000"); the
// total is the sum of the lines, each rounded on its own (docs/billing.md).
//
// JSON: tenant, from, to, by, lines [{tenant, sandbox_id, from, to, compute_gib_seconds,
// storage_gib_seconds, compute_micros, storage_micros, total_micros, compute_usd,
// storage_usd, total_usd, events}], total_compute_micros, total_storage_micros,
// total_micros, total_usd. The *_usd fields are decimal strings ("0.600000"), exact.
// CSV: a header row, one row per line, and a final "total" row.
#pragma once

#include "api/records.hpp"
#include "cli/json_util.hpp"
#include "cli/time_arg.hpp"

#include <string>

namespace sandboxd::cli {

struct bill_period {
  std::string tenant;
  time_point from;
  time_point to;
  api::bill_grouping by = api::bill_grouping::sandbox;
};

std::string grouping_name(api::bill_grouping by);

// Micro-dollars as dollars with six decimals: 600000 -> "0.600000", -5 -> "-0.000005".
std::string usd(std::int64_t micros);

json bill_json(const bill_period& p, const api::bill_report& r);
std::string bill_text(const bill_period& p, const api::bill_report& r);
std::string bill_csv(const bill_period& p, const api::bill_report& r);

} // namespace sandboxd::cli
