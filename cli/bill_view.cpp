#include "cli/bill_view.hpp"

#include "cli/table.hpp"
#include "cli/terminal_text.hpp"

#include <cstdio>

namespace sandboxd::cli {
namespace {

constexpr double k_seconds_per_hour = 3600;
constexpr double k_hours_per_month = 730; // as the prices are quoted (docs/billing.md)

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

time_point at(std::int64_t ns) {
  return time_point{std::chrono::nanoseconds{ns}};
}

std::string who(const api::bill_line& l) {
  return l.sandbox_id.empty() ? format_time_seconds(at(l.from_ns)) : l.sandbox_id;
}

std::string events_text(const api::bill_line& l) {
  std::string out;
  for (const auto& e : l.event_ids)
    out += (out.empty() ? "" : " ") + e;
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

} // namespace

std::string grouping_name(api::bill_grouping by) {
  switch (by) {
  case api::bill_grouping::hour:
    return "hour";
  case api::bill_grouping::day:
    return "day";
  default:
    return "sandbox";
  }
}

std::string usd(std::int64_t micros) {
  const bool negative = micros < 0;
  const auto m =
    negative ? -static_cast<unsigned long long>(micros) : static_cast<unsigned long long>(micros);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%06llu", negative ? "-" : "", m / 1'000'000,
                m % 1'000'000);
  return buf;
}

json bill_json(const bill_period& p, const api::bill_report& r) {
  json lines = json::array();
  for (const auto& l : r.lines) {
    json j;
    j["tenant"] = l.tenant;
    j["sandbox_id"] = l.sandbox_id;
    j["from"] = format_time(at(l.from_ns));
    j["to"] = format_time(at(l.to_ns));
    j["compute_gib_seconds"] = l.compute_gib_seconds;
    j["storage_gib_seconds"] = l.storage_gib_seconds;
    j["compute_micros"] = l.compute_micros;
    j["storage_micros"] = l.storage_micros;
    j["total_micros"] = l.compute_micros + l.storage_micros;
    j["compute_usd"] = usd(l.compute_micros);
    j["storage_usd"] = usd(l.storage_micros);
    j["total_usd"] = usd(l.compute_micros + l.storage_micros);
    j["events"] = l.event_ids;
    lines.push_back(std::move(j));
  }
  json j;
  j["tenant"] = p.tenant;
  j["from"] = format_time(p.from);
  j["to"] = format_time(p.to);
  j["by"] = grouping_name(p.by);
  j["lines"] = std::move(lines);
  j["total_compute_micros"] = r.total_compute_micros;
  j["total_storage_micros"] = r.total_storage_micros;
  j["total_micros"] = r.total_micros;
  j["total_usd"] = usd(r.total_micros);
  return j;
}

std::string bill_text(const bill_period& p, const api::bill_report& r) {
  std::string out = "bill of tenant " + terminal_text(p.tenant) + " from " +
                    format_time_seconds(p.from) + " to " + format_time_seconds(p.to) + ", by " +
                    grouping_name(p.by) + "\n\n";
  const bool by_sandbox = p.by == api::bill_grouping::sandbox;
  std::vector<row> rows;
  for (const auto& l : r.lines) {
    row cells{who(l),
              fixed(l.compute_gib_seconds / k_seconds_per_hour, 6),
              fixed(l.storage_gib_seconds / (k_seconds_per_hour * k_hours_per_month), 6),
              "$" + usd(l.compute_micros),
              "$" + usd(l.storage_micros),
              "$" + usd(l.compute_micros + l.storage_micros)};
    if (by_sandbox)
      cells.push_back(events_text(l));
    rows.push_back(std::move(cells));
  }
  rows.push_back({"total", "", "", "$" + usd(r.total_compute_micros),
                  "$" + usd(r.total_storage_micros), "$" + usd(r.total_micros)});
  row header{by_sandbox ? "SANDBOX" : "PERIOD",
             "COMPUTE GiB-h",
             "STORAGE GiB-month",
             "COMPUTE",
             "STORAGE",
             "AMOUNT"};
  if (by_sandbox)
    header.push_back("EVENTS");
  out += render_table(header, rows);
  if (r.lines.empty())
    out += "(no usage in this period)\n";
  return out;
}

std::string bill_csv(const bill_period& p, const api::bill_report& r) {
  std::string out = "tenant,sandbox_id,from,to,compute_gib_seconds,storage_gib_seconds,"
                    "compute_usd,storage_usd,total_usd,events\n";
  for (const auto& l : r.lines)
    out += csv_field(l.tenant) + "," + csv_field(l.sandbox_id) + "," + format_time(at(l.from_ns)) +
           "," + format_time(at(l.to_ns)) + "," + fixed(l.compute_gib_seconds, 6) + "," +
           fixed(l.storage_gib_seconds, 6) + "," + usd(l.compute_micros) + "," +
           usd(l.storage_micros) + "," + usd(l.compute_micros + l.storage_micros) + "," +
           csv_field(events_text(l)) + "\n";
  out += csv_field(p.tenant) + ",total," + format_time(p.from) + "," + format_time(p.to) + ",,," +
         usd(r.total_compute_micros) + "," + usd(r.total_storage_micros) + "," +
         usd(r.total_micros) + ",\n";
  return out;
}

} // namespace sandboxd::cli
