// The actors checked against the log (admin scope): check determinism.
//
// For one sandbox or every one, the state its actor holds against the state replayed from
// its events in the log, at the same sequence number: exit 0 when every state is equal, 1
// listing each differing field with both values.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/table.hpp"

namespace sandboxd::cli {
namespace {

json check_json(const api::determinism_check& c) {
  json diffs = json::array();
  for (const auto& d : c.differences)
    diffs.push_back({{"sandbox_id", d.sandbox_id},
                     {"field", d.field},
                     {"live", d.live},
                     {"replayed", d.replayed}});
  return {{"checked", c.checked}, {"equal", c.differences.empty()}, {"differences", diffs}};
}

std::string check_text(const api::determinism_check& c) {
  std::string out = std::to_string(c.checked) + " sandboxes checked, " +
                    std::to_string(c.differences.size()) + " differing fields\n";
  if (c.differences.empty())
    return out;
  std::vector<row> rows;
  for (const auto& d : c.differences)
    rows.push_back({d.sandbox_id, d.field, d.live.empty() ? "-" : d.live,
                    d.replayed.empty() ? "-" : d.replayed});
  return out + render_table({"SANDBOX", "FIELD", "LIVE", "REPLAYED"}, rows);
}

} // namespace

void add_check_commands(command_table& t) {
  auto* group = t.add(t.app(), "check", "Live state checked against the log (admin)",
                      "  sandboxctl check determinism", {});
  group->require_subcommand(0, 1);
  auto id = std::make_shared<std::string>();
  auto* determinism =
    t.add(*group, "determinism",
          "The state each sandbox's actor holds against the state replayed from its events: exit 0 "
          "when equal, 1 listing each differing field",
          "  sandboxctl check determinism\n"
          "  sandboxctl --json check determinism sb_0123456789abcdef",
          [id](context& cx) {
            return with_client(cx, [&](api::client& client) {
              return report_check(cx, client.check_determinism(*id), check_json, check_text);
            });
          });
  determinism->add_option("id", *id, "one sandbox (default: every sandbox of the log)")
    ->type_name("ID");
}

} // namespace sandboxd::cli
