// The read models checked against the log (admin scope): projections verify.
//
// verify rebuilds a projection from offset zero into a scratch schema and compares it with
// the live read models in one snapshot: exit 0 when they are equal, 1 listing each row only
// one side has, with the events of its sandbox that the comparison covered.
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"

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
  std::string out = c.name + ": " + std::to_string(c.rows_compared) + " rows compared, " +
                    std::to_string(c.differences.size()) + " differing\n";
  for (const auto& d : c.differences) {
    out += d.table + "  only in " + d.side + "  " + d.row + "\n";
    std::string ids;
    for (const auto& e : d.events)
      ids += (ids.empty() ? "" : " ") + e;
    out += "  events: " + (ids.empty() ? std::string("(none)") : ids) + "\n";
  }
  return out;
}

} // namespace

void add_projection_commands(command_table& t) {
  auto* group = t.add(t.app(), "projections", "The read models checked against the log (admin)",
                      "  sandboxctl projections verify", {});
  group->require_subcommand(0, 1);
  auto name = std::make_shared<std::string>();
  auto* verify = t.add(
    *group, "verify",
    "Rebuild a projection from the log into a scratch schema and compare it with the live read "
    "models: exit 0 when equal, 1 listing each differing row and its events",
    "  sandboxctl projections verify\n"
    "  sandboxctl --json projections verify read_models",
    [name](context& cx) {
      return with_client(cx, [&](api::client& client) {
        auto check = client.verify_projection(*name);
        if (!check)
          return cx.fail(check.err());
        if (cx.as_json())
          cx.print(check_json(*check));
        else
          cx.out(check_text(*check));
        return check->differences.empty() ? k_exit_ok : k_exit_check_failed;
      });
    });
  verify->add_option("name", *name, "the projection (default: read_models, every read model)")
    ->type_name("NAME");
}

} // namespace sandboxd::cli
