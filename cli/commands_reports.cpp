// The reports (admin scope): bill, audit, audit verify.
#include "cli/audit_view.hpp"
#include "cli/bill_view.hpp"
#include "cli/command_support.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"

namespace sandboxd::cli {
namespace {

// A --from/--to flag; empty text is `fallback`.
parsed<time_point> time_flag(context& cx, const std::string& flag, const std::string& text,
                             time_point fallback) {
  parsed<time_point> p;
  if (text.empty()) {
    p.value = fallback;
    return p;
  }
  auto t = parse_time(text, cx.now());
  if (!t)
    p.exit = cx.usage(flag + ": " + t.err().message);
  else
    p.value = *t;
  return p;
}

void add_bill(command_table& t) {
  struct args {
    std::string tenant, from, to, by = "sandbox";
    bool csv = false;
  };
  auto a = std::make_shared<args>();
  auto* c =
    t.add(t.app(), "bill",
          "A tenant's bill for a period: compute and storage per sandbox (or hour, day) in dollars",
          "  sandboxctl bill --from 2026-11-01 --to 2026-12-01\n"
          "  sandboxctl bill --from -24h --to now --by hour --csv > usage.csv",
          [a](context& cx) {
            auto from = time_flag(cx, "--from", a->from, {});
            if (!from)
              return from.exit;
            auto to = time_flag(cx, "--to", a->to, {});
            if (!to)
              return to.exit;
            bill_period p;
            // The bill is kept by the hour: the period is widened to whole hours.
            p.from = floor_hour(*from.value);
            p.to = ceil_hour(*to.value);
            if (p.to <= p.from)
              return cx.usage("--to must be after --from");
            if (a->by == "hour")
              p.by = api::bill_grouping::hour;
            else if (a->by == "day")
              p.by = api::bill_grouping::day;
            else if (a->by != "sandbox")
              return cx.usage("--by '" + a->by + "': use sandbox, hour or day");
            if (a->csv && cx.as_json())
              return cx.usage("--csv and --json: choose one");
            return with_client(cx, [&](api::client& client) {
              p.tenant = a->tenant.empty() ? client.who().tenant : a->tenant;
              auto r = client.bill(p.tenant, p.from.time_since_epoch().count(),
                                   p.to.time_since_epoch().count(), p.by);
              if (!r)
                return cx.fail(r.err());
              if (cx.as_json())
                cx.print(bill_json(p, *r));
              else
                cx.out(a->csv ? bill_csv(p, *r) : bill_text(p, *r));
              return k_exit_ok;
            });
          });
  c->add_option("--tenant", a->tenant, "whose bill (default: the token's tenant)")
    ->type_name("TENANT");
  c->add_option("--from", a->from,
                "start: RFC 3339, a date, now or -DURATION (rounded down to "
                "the hour)")
    ->required()
    ->type_name("TIME");
  c->add_option("--to", a->to, "end, exclusive (rounded up to the hour)")
    ->required()
    ->type_name("TIME");
  c->add_option("--by", a->by, "one line per sandbox (default), hour or day")
    ->type_name("sandbox|hour|day");
  c->add_flag("--csv", a->csv, "comma-separated values with a header row and a total row");
}

void add_audit(command_table& t) {
  struct args {
    std::string tenant, sandbox, from, to, page_token;
    std::uint32_t limit = 100;
  };
  auto a = std::make_shared<args>();
  auto* audit = t.add(
    t.app(), "audit",
    "List audit rows: every operation, accepted or refused, by time; 'audit verify' checks them",
    "  sandboxctl audit --sandbox sb-0a1b2c3d4e5f\n"
    "  sandboxctl audit --from -1h --limit 1000 --json",
    [a](context& cx) {
      auto from = time_flag(cx, "--from", a->from, {});
      if (!from)
        return from.exit;
      auto to = time_flag(cx, "--to", a->to, {});
      if (!to)
        return to.exit;
      api::audit_query q;
      q.tenant = a->tenant;
      q.sandbox_id = a->sandbox;
      q.from_ns = from.value->time_since_epoch().count();
      q.to_ns = to.value->time_since_epoch().count();
      q.page_token = a->page_token;
      q.limit = a->limit;
      return with_client(cx, [&](api::client& client) {
        auto page = client.audit(q);
        if (!page)
          return cx.fail(page.err());
        if (cx.as_json()) {
          json rows = json::array();
          for (const auto& e : page->rows)
            rows.push_back(audit_row_json(e));
          cx.print(json{{"rows", std::move(rows)}, {"next_page_token", page->next_page_token}});
          return k_exit_ok;
        }
        cx.out(audit_table(page->rows));
        if (!page->next_page_token.empty())
          cx.note("more rows: add --page-token " + page->next_page_token);
        return k_exit_ok;
      });
    });
  audit->add_option("--tenant", a->tenant, "only this tenant's rows (default: every tenant)")
    ->type_name("TENANT");
  audit->add_option("--sandbox", a->sandbox, "only this sandbox's rows")->type_name("ID");
  audit->add_option("--from", a->from, "from this time (RFC 3339, a date, -DURATION)")
    ->type_name("TIME");
  audit->add_option("--to", a->to, "before this time")->type_name("TIME");
  audit->add_option("--limit", a->limit, "at most this many rows (at most 1000; default 100)")
    ->type_name("N");
  audit->add_option("--page-token", a->page_token, "the next page, as the last listing said")
    ->type_name("TOKEN");
  audit->require_subcommand(0, 1);

  auto tenant = std::make_shared<std::string>();
  auto* verify =
    t.add(*audit, "verify",
          "Recompute the audit chains: exit 0 when they hold, 1 naming the first bad row otherwise",
          "  sandboxctl audit verify\n"
          "  sandboxctl audit verify --tenant acme --json",
          [tenant](context& cx) {
            return with_client(cx, [&](api::client& client) {
              auto check = client.audit_verify(*tenant);
              if (!check)
                return cx.fail(check.err());
              if (cx.as_json())
                cx.print(audit_check_json(*check));
              else
                cx.out(audit_check_text(*check));
              return check->problems.empty() ? k_exit_ok : k_exit_check_failed;
            });
          });
  verify->add_option("--tenant", *tenant, "only this tenant's chains (default: every tenant)")
    ->type_name("TENANT");
}

} // namespace

void add_report_commands(command_table& t) {
  add_bill(t);
  add_audit(t);
}

} // namespace sandboxd::cli
