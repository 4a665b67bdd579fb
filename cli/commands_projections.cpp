// The read models against the log (admin scope): projections status, verify and rebuild.
//
// status shows, per projection and log partition, the projection's offset, the log's end
// offset and the lag in events and seconds. verify rebuilds a projection from offset zero
// into a scratch schema and compares it with the live read models in one snapshot: exit 0
// when they are equal, 1 listing each row only one side has, with the events of its sandbox
// that the comparison covered. rebuild replaces the live read models' rows by such a rebuild
// in one transaction while the daemon keeps serving.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/table.hpp"
#include "cli/terminal_text.hpp"

#include <cstdio>

namespace sandboxd::cli {
namespace {

json check_json(const api::projection_check& c) {
  json diffs = json::array();
  for (const auto& d : c.differences)
    diffs.push_back({{"table", d.table},
                     {"side", d.side},
                     {"row", json::parse(d.row, nullptr, false)},
                     {"events", d.events}});
  json offsets = json::object();
  for (const auto& [p, o] : c.offsets)
    offsets[std::to_string(p)] = o;
  return {{"name", c.name},
          {"equal", c.differences.empty()},
          {"rows_compared", c.rows_compared},
          {"offsets", offsets},
          {"differences", diffs}};
}

std::string check_text(const api::projection_check& c) {
  std::string out = terminal_text(c.name) + ": " + std::to_string(c.rows_compared) +
                    " rows compared, " + std::to_string(c.differences.size()) + " differing\n";
  for (const auto& d : c.differences) {
    out += terminal_text(d.table) + "  only in " + terminal_text(d.side) + "  " +
           terminal_text(d.row) + "\n";
    std::string ids;
    for (const auto& e : d.events)
      ids += (ids.empty() ? "" : " ") + e;
    out += "  events: " + (ids.empty() ? std::string("(none)") : terminal_text(ids)) + "\n";
  }
  return out;
}

json status_json(const std::vector<api::projection_partition>& parts) {
  json out = json::array();
  for (const auto& p : parts)
    out.push_back({{"projection", p.projection},
                   {"partition", p.partition},
                   {"offset", p.offset},
                   {"end_offset", p.end_offset},
                   {"lag_events", p.lag_events},
                   {"lag_seconds", p.lag_seconds}});
  return {{"partitions", out}};
}

std::string status_text(const std::vector<api::projection_partition>& parts) {
  std::vector<row> rows;
  for (const auto& p : parts) {
    char lag[32];
    std::snprintf(lag, sizeof lag, "%.1f", p.lag_seconds);
    rows.push_back({p.projection, std::to_string(p.partition), std::to_string(p.offset),
                    std::to_string(p.end_offset), std::to_string(p.lag_events), lag});
  }
  return render_table({"PROJECTION", "PARTITION", "OFFSET", "END", "LAG", "LAG_SECONDS"}, rows);
}

json rebuild_json(const api::projection_rebuild& r) {
  json offsets = json::object();
  for (const auto& [p, o] : r.offsets)
    offsets[std::to_string(p)] = o;
  return {{"name", r.name}, {"rows_replaced", r.rows_replaced}, {"offsets", offsets}};
}

} // namespace

void add_projection_commands(command_table& t) {
  auto* group = t.add(t.app(), "projections",
                      "The read models against the log: status, verify, rebuild (admin)",
                      "  sandboxctl projections status\n  sandboxctl projections verify", {});
  group->require_subcommand(0, 1);
  t.add(*group, "status",
        "Each projection's offset per log partition against the log's end offset, with the lag "
        "in events and seconds",
        "  sandboxctl projections status\n"
        "  sandboxctl --json projections status",
        [](context& cx) {
          return with_client(cx, [&](api::client& client) {
            auto parts = client.projection_status();
            if (!parts)
              return cx.fail(parts.err());
            if (cx.as_json())
              cx.print(status_json(*parts));
            else
              cx.out(status_text(*parts));
            return k_exit_ok;
          });
        });
  auto rebuilt = std::make_shared<std::string>("read_models");
  auto* rebuild =
    t.add(*group, "rebuild",
          "Rebuild a projection from the log into a scratch schema while sandboxd keeps serving, "
          "then replace the live read models' rows with it in one transaction",
          "  sandboxctl projections rebuild read_models", [rebuilt](context& cx) {
            return with_client(cx, [&](api::client& client) {
              auto r = client.rebuild_projection(*rebuilt);
              if (!r)
                return cx.fail(r.err());
              if (cx.as_json())
                cx.print(rebuild_json(*r));
              else
                cx.out(terminal_text(r->name) + ": rebuilt from the log, " +
                       std::to_string(r->rows_replaced) + " rows now live\n");
              return k_exit_ok;
            });
          });
  rebuild->add_option("name", *rebuilt, "the projection (read_models: every read model)")
    ->required()
    ->type_name("NAME");
  auto name = std::make_shared<std::string>();
  auto* verify = t.add(
    *group, "verify",
    "Rebuild a projection from the log into a scratch schema and compare it with the live read "
    "models: exit 0 when equal, 1 listing each differing row and its events",
    "  sandboxctl projections verify\n"
    "  sandboxctl --json projections verify read_models",
    [name](context& cx) {
      return with_client(cx, [&](api::client& client) {
        return report_check(cx, client.verify_projection(*name), check_json, check_text);
      });
    });
  verify->add_option("name", *name, "the projection (default: read_models, every read model)")
    ->type_name("NAME");
}

} // namespace sandboxd::cli
