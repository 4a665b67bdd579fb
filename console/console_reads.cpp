#include "console/console_reads.hpp"

#include "api/read_store.hpp"
#include "cli/audit_view.hpp"
#include "cli/bill_view.hpp"
#include "cli/sandbox_view.hpp"
#include "console/metrics_view.hpp"
#include "console/timeline.hpp"
#include "console/timeline_view.hpp"
#include "node/node.hpp"
#include "node/runtime_set.hpp"
#include "replay/replay_fold.hpp"
#include "replay/sandbox_history.hpp"

#include <pqxx/pqxx>

#include <algorithm>

namespace sandboxd::console {
namespace {

using cli::json;

// A fault of the log (unreadable, a record that does not decode, a gap) as an error value.
template <class F>
auto log_call(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_error(errc::internal, what + " failed: " + e.what() +
                                        "; the log cannot be read as it should (docs/replay.md)");
  }
}

bool visible(const api::identity& who, const std::string& tenant) {
  return who.has_scope(api::k_scope_admin) || who.tenant == tenant;
}

// The sandbox's history folded, or not_found when the caller may not see it.
result<std::vector<replay::replay_step>> steps_of(node::node& n, const api::identity& who,
                                                  const std::string& id) {
  if (!plausible_sandbox_id(id))
    return sandbox_not_found(id);
  auto history = replay::read_history(n.log(), id);
  if (history.empty() || !visible(who, history.front().event.tenant))
    return sandbox_not_found(id);
  return replay::fold_history(id, std::move(history));
}

json runtimes_of(node::node& n) {
  json out = json::array();
  const auto& held = n.runtimes();
  for (auto kind :
       {events::runtime_kind::runsc, events::runtime_kind::crun, events::runtime_kind::hollow}) {
    const bool is_held = std::find(held.begin(), held.end(), kind) != held.end();
    json r;
    r["name"] = events::to_string(kind);
    r["held"] = is_held;
    r["default"] = is_held && kind == n.default_runtime();
    if (!is_held) {
      auto why = node::runtime_unavailable(kind);
      r["unavailable"] = why ? *why : std::string("not enabled (--runtime)");
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace

error sandbox_not_found(const std::string& sandbox_id) {
  return make_error(errc::not_found,
                    "sandbox " + sandbox_id +
                      " does not exist; check the id on the Sandboxes page (deleted ones show "
                      "with \"deleted\" ticked)");
}

console_reads::console_reads(node::node& n)
    : node_(n), store_(std::make_unique<api::read_store>(n.conninfo(), n.schema())),
      runtimes_(runtimes_of(n)) {}

console_reads::~console_reads() = default;

result<void> console_reads::need_admin(const api::identity& who, const char* page) const {
  if (who.has_scope(api::k_scope_admin))
    return {};
  return make_error(errc::permission_denied, std::string("the ") + page +
                                               " page needs the admin scope: principal " +
                                               who.principal + " of tenant " + who.tenant +
                                               " has none; sign in with a token that has it");
}

result<json> console_reads::sandboxes(const api::identity& who, const list_request& q) {
  std::string tenant = who.tenant;
  if (!q.tenant.empty() && q.tenant != who.tenant) {
    if (auto ok = need_admin(who, "another tenant's Sandboxes"); !ok)
      return ok.err();
    tenant = q.tenant;
  }
  auto page = store_->list(tenant, q.filter);
  if (!page)
    return page.err();
  json rows = json::array();
  for (const auto& s : page->rows) {
    json r = cli::sandbox_row_json(s);
    r["runtime"] = s.runtime;
    rows.push_back(std::move(r));
  }
  return json{
    {"tenant", tenant}, {"sandboxes", std::move(rows)}, {"next_page_token", page->next_page_token}};
}

result<json> console_reads::timeline(const api::identity& who, const std::string& id) {
  return log_call("reading sandbox " + id + "'s events", [&]() -> result<json> {
    auto steps = steps_of(node_, who, id);
    if (!steps)
      return steps.err();
    return timeline_json(*steps, make_timeline(*steps));
  });
}

result<json> console_reads::state(const api::identity& who, const std::string& id,
                                  std::uint64_t sequence) {
  return log_call("reading sandbox " + id + "'s events", [&]() -> result<json> {
    auto steps = steps_of(node_, who, id);
    if (!steps)
      return steps.err();
    const auto& s = *steps;
    auto it = std::find_if(s.begin(), s.end(),
                           [&](const auto& step) { return step.event.sequence == sequence; });
    if (it == s.end())
      return make_error(errc::not_found, "sandbox " + id + " has no event " +
                                           std::to_string(sequence) + "; its events are 1 to " +
                                           std::to_string(s.back().event.sequence));
    return state_at_json(s, static_cast<std::size_t>(it - s.begin()));
  });
}

result<json> console_reads::bill(const api::identity& who, const bill_request& q) {
  if (auto ok = need_admin(who, "Billing"); !ok)
    return ok.err();
  cli::bill_period period{q.tenant.empty() ? who.tenant : q.tenant, q.from, q.to,
                          api::bill_grouping::sandbox};
  const auto from = q.from.time_since_epoch().count(), to = q.to.time_since_epoch().count();
  auto by_sandbox = store_->bill(period.tenant, from, to, api::bill_grouping::sandbox);
  if (!by_sandbox)
    return by_sandbox.err();
  auto by_day = store_->bill(period.tenant, from, to, api::bill_grouping::day);
  if (!by_day)
    return by_day.err();
  cli::bill_period daily = period;
  daily.by = api::bill_grouping::day;
  return json{{"bill", cli::bill_json(period, *by_sandbox)},
              {"by_day", cli::bill_json(daily, *by_day)}};
}

result<std::string> console_reads::bill_csv(const api::identity& who, const bill_request& q) {
  if (auto ok = need_admin(who, "Billing"); !ok)
    return ok.err();
  cli::bill_period period{q.tenant.empty() ? who.tenant : q.tenant, q.from, q.to,
                          api::bill_grouping::sandbox};
  auto r = store_->bill(period.tenant, q.from.time_since_epoch().count(),
                        q.to.time_since_epoch().count(), api::bill_grouping::sandbox);
  if (!r)
    return r.err();
  return cli::bill_csv(period, *r);
}

result<json> console_reads::audit(const api::identity& who, const api::audit_query& q) {
  if (auto ok = need_admin(who, "Audit"); !ok)
    return ok.err();
  auto page = store_->audit(q);
  if (!page)
    return page.err();
  json rows = json::array();
  for (const auto& e : page->rows)
    rows.push_back(cli::audit_row_json(e));
  return json{{"rows", std::move(rows)}, {"next_page_token", page->next_page_token}};
}

result<json> console_reads::audit_verify(const api::identity& who, const std::string& tenant) {
  if (auto ok = need_admin(who, "Audit"); !ok)
    return ok.err();
  auto check = store_->verify(tenant);
  if (!check)
    return check.err();
  json doc = cli::audit_check_json(*check);
  doc["first_bad"] = nullptr;
  if (check->problems.empty())
    return doc;
  // The rows of the first bad row's chain around it: what the page shows it among.
  const auto& p = check->problems.front();
  try {
    pqxx::connection c(node_.conninfo());
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(c);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(node_.schema()));
    auto rows = tx.exec_params(
      "SELECT tenant, partition, position, event_id, sandbox_id, occurred_at_ns, principal,"
      " action, outcome, detail, encode(hash, 'hex'), redacted FROM audit_log"
      " WHERE tenant = $1 AND partition = $2 AND position BETWEEN $3 AND $4 ORDER BY position",
      p.tenant, p.partition, p.position - 3, p.position + 3);
    json around = json::array();
    for (const auto& r : rows) {
      api::audit_entry e;
      e.tenant = r[0].as<std::string>();
      e.partition = r[1].as<std::int32_t>();
      e.position = r[2].as<std::int64_t>();
      e.event_id = r[3].as<std::string>();
      e.sandbox_id = r[4].as<std::string>();
      e.occurred_at_ns = r[5].as<std::int64_t>();
      e.principal = r[6].as<std::string>();
      e.action = r[7].as<std::string>();
      e.outcome = r[8].as<std::string>();
      e.detail = r[9].as<std::string>();
      const auto hex = r[10].as<std::string>();
      for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        e.hash.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      e.redacted = r[11].as<bool>();
      around.push_back(cli::audit_row_json(e));
    }
    doc["first_bad"] = {{"tenant", p.tenant},     {"partition", p.partition},
                        {"position", p.position}, {"kind", p.kind},
                        {"message", p.message},   {"rows", std::move(around)}};
  } catch (const std::exception& e) {
    return make_error(errc::unavailable, std::string("the audit rows around the first bad row "
                                                     "cannot be read (") +
                                           e.what() + "); retry later");
  }
  return doc;
}

result<json> console_reads::node_figures(const api::identity& who) {
  if (auto ok = need_admin(who, "Node"); !ok)
    return ok.err();
  json doc;
  const auto status = node_.status();
  doc["node"] = {{"data_dir", status.data_dir},
                 {"log", status.log},
                 {"postgres", status.postgres},
                 {"actors_active", status.directory.active},
                 {"actors_dormant", status.directory.dormant},
                 {"timers", status.directory.timers}};
  doc["runtimes"] = runtimes_;
  auto lag = log_call("reading the projections' status",
                      [&] { return store_->projection_status(node_.log()); });
  json partitions = json::array();
  if (lag)
    for (const auto& p : *lag)
      partitions.push_back({{"projection", p.projection},
                            {"partition", p.partition},
                            {"offset", p.offset},
                            {"end_offset", p.end_offset},
                            {"lag_events", p.lag_events},
                            {"lag_seconds", p.lag_seconds}});
  else
    doc["projections_error"] =
      cli::json{{"code", to_string(lag.code())}, {"message", lag.err().message}};
  doc["projections"] = std::move(partitions);
  doc["metrics"] = metrics_json(node_.probe().Collect())["families"];
  return doc;
}

} // namespace sandboxd::console
