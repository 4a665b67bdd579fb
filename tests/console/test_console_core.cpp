// The console's pure parts: sessions, the HTTP policy (headers, cookie, refusals), the query
// parameters, the timeline's layout and its JSON view, and the compiled-in front end.
#define BOOST_TEST_MODULE console_core
#include <boost/test/unit_test.hpp>

#include "console/assets.hpp"
#include "console/http_error.hpp"
#include "console/http_policy.hpp"
#include "console/request_args.hpp"
#include "console/routes.hpp"
#include "console/session_table.hpp"
#include "console/timeline.hpp"
#include "console/timeline_view.hpp"
#include "replay/replay_fold.hpp"
#include "tests/projections/lifecycle_stream.hpp"

#include <regex>
#include <set>

using namespace std::chrono_literals;
using namespace sandboxd;
using namespace sandboxd::console;
using sandboxd::test::sandbox_events;

namespace {

api::identity alice() {
  return {"acme", "alice", {"sandboxes"}};
}

std::vector<replay::replay_step> fold(const sandbox_events& s) {
  std::vector<replay::history_entry> h;
  std::int64_t offset = 0;
  for (const auto& e : s.events())
    h.push_back({0, offset++, e});
  return replay::fold_history(s.id(), std::move(h));
}

events::exec_finished finished(std::string id, int code) {
  events::exec_finished f;
  f.exec_id = std::move(id);
  f.exit_code = code;
  return f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sessions)

BOOST_AUTO_TEST_CASE(a_session_is_found_by_its_id_only_while_it_lives) {
  session_table t({std::chrono::seconds(60), std::chrono::seconds(600), 16, 100});
  const auto t0 = clock::now();
  auto id = t.open(alice(), t0);
  BOOST_REQUIRE(id.ok());
  BOOST_TEST(well_formed_session_id(*id));
  BOOST_TEST(t.find(*id, t0 + 10s)->principal == "alice");
  // Used 10 s in: its idle time restarted, so 65 s in it still lives...
  BOOST_TEST(t.find(*id, t0 + 65s).has_value());
  // ...but not 60 s after its last use.
  BOOST_TEST(!t.find(*id, t0 + 126s).has_value());
  // An id one digit off is nobody's.
  auto id2 = t.open(alice(), t0);
  std::string wrong = *id2;
  wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
  BOOST_TEST(!t.find(wrong, t0).has_value());
  BOOST_TEST(!t.find(id2->substr(0, 63), t0).has_value());
  BOOST_TEST(!t.find(*id2 + "0", t0).has_value());
}

BOOST_AUTO_TEST_CASE(a_session_ends_at_its_lifetime_however_busy) {
  session_table t({std::chrono::seconds(60), std::chrono::seconds(180), 16, 100});
  const auto t0 = clock::now();
  auto id = t.open(alice(), t0);
  for (auto at = 0s; at < 180s; at += 30s)
    BOOST_TEST(t.find(*id, t0 + at).has_value());
  BOOST_TEST(!t.find(*id, t0 + 180s).has_value());
}

BOOST_AUTO_TEST_CASE(logout_ends_the_session) {
  session_table t;
  const auto t0 = clock::now();
  auto id = t.open(alice(), t0);
  t.close(*id);
  BOOST_TEST(!t.find(*id, t0).has_value());
}

BOOST_AUTO_TEST_CASE(ids_are_random_and_the_table_keeps_only_their_digests) {
  session_table t;
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i)
    ids.insert(*t.open({"acme", "p" + std::to_string(i), {}}, clock::now()));
  BOOST_TEST(ids.size() == 200u);
}

BOOST_AUTO_TEST_CASE(one_principal_cannot_fill_the_table_or_end_others_sessions) {
  session_table t({std::chrono::seconds(600), std::chrono::seconds(6000), 3, 5});
  const auto t0 = clock::now();
  auto bob = t.open({"acme", "bob", {}}, t0);
  std::vector<std::string> mine;
  for (int i = 0; i < 10; ++i)
    mine.push_back(*t.open(alice(), t0 + std::chrono::seconds(i)));
  // Alice keeps her newest 3; Bob's session was never touched.
  BOOST_TEST(t.size(t0 + 10s) == 4u);
  BOOST_TEST(t.find(*bob, t0 + 10s).has_value());
  BOOST_TEST(!t.find(mine[6], t0 + 10s).has_value());
  BOOST_TEST(t.find(mine[9], t0 + 10s).has_value());
  // Full: a new principal is refused, nobody is signed out for it.
  BOOST_TEST(t.open({"globex", "carol", {}}, t0 + 10s).ok());
  auto refused = t.open({"globex", "dave", {}}, t0 + 10s);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.code() == errc::resource_exhausted);
  BOOST_TEST(t.find(*bob, t0 + 10s).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(policy)

BOOST_AUTO_TEST_CASE(the_cookie_is_http_only_strict_and_secure_over_tls) {
  const auto plain = session_cookie("abc", false);
  BOOST_TEST(plain == "sandboxd_session=abc; Path=/; HttpOnly; SameSite=Strict");
  const auto tls = session_cookie("abc", true);
  BOOST_TEST(tls == "__Host-sandboxd_session=abc; Path=/; HttpOnly; SameSite=Strict; Secure");
  BOOST_TEST(cleared_session_cookie(true).find("Max-Age=0") != std::string::npos);
  BOOST_TEST(cleared_session_cookie(true).find("Secure") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cookie_values_are_read_by_exact_name) {
  BOOST_TEST(*cookie_value("a=1; sandboxd_session=xyz; b=2", "sandboxd_session") == "xyz");
  BOOST_TEST(!cookie_value("xsandboxd_session=1", "sandboxd_session").has_value());
  BOOST_TEST(!cookie_value("", "sandboxd_session").has_value());
  BOOST_TEST(*cookie_value("  sandboxd_session = q ", "sandboxd_session") == "q");
}

BOOST_AUTO_TEST_CASE(the_csp_allows_only_the_console_itself) {
  const auto& csp = content_security_policy();
  for (const char* must : {"default-src 'none'", "script-src 'self'", "style-src 'self'",
                           "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'",
                           "object-src 'none'", "require-trusted-types-for 'script'"})
    BOOST_TEST(csp.find(must) != std::string::npos, "the CSP lacks " << must);
  for (const char* never : {"unsafe-inline", "unsafe-eval", "http:", "https:", "*", "data:"})
    BOOST_TEST(csp.find(never) == std::string::npos, "the CSP allows " << never);
  bool csp_header = false;
  for (const auto& [k, v] : security_headers())
    csp_header = csp_header || (k == "Content-Security-Policy" && v == csp);
  BOOST_TEST(csp_header);
}

BOOST_AUTO_TEST_CASE(hosts_are_parsed_and_loopback_is_recognised) {
  BOOST_TEST(*host_of("127.0.0.1:8470") == "127.0.0.1");
  BOOST_TEST(*host_of("[::1]:8470") == "::1");
  BOOST_TEST(*host_of("LocalHost") == "localhost");
  BOOST_TEST(!host_of("").has_value());
  BOOST_TEST(!host_of("a:b").has_value());
  BOOST_TEST(!host_of("evil.com/x").has_value());
  BOOST_TEST(loopback_host("127.1.2.3"));
  BOOST_TEST(loopback_host("localhost"));
  BOOST_TEST(!loopback_host("127.0.0.1.evil.com"));
  BOOST_TEST(!loopback_host("10.0.0.1"));
}

BOOST_AUTO_TEST_CASE(rebound_names_other_sites_and_foreign_sign_ins_are_refused) {
  request_facts ok{"GET", "/api/sandboxes", "127.0.0.1:8470", "", "same-origin", true, false};
  BOOST_TEST(!refuse_before_routing(ok).has_value());
  auto rebound = ok;
  rebound.host = "attacker.example:8470";
  BOOST_TEST(refuse_before_routing(rebound)->status == 421);
  auto off_loopback = rebound;
  off_loopback.listening_on_loopback = false;
  BOOST_TEST(!refuse_before_routing(off_loopback).has_value());
  auto cross = ok;
  cross.sec_fetch_site = "cross-site";
  BOOST_TEST(refuse_before_routing(cross)->status == 403);
  auto page = cross;
  page.path = "/"; // a link from elsewhere to the page itself is fine: it holds no data
  BOOST_TEST(!refuse_before_routing(page).has_value());
  request_facts login{
    "POST", "/api/login", "127.0.0.1:8470", "http://127.0.0.1:8470", "same-origin", true, false};
  BOOST_TEST(!refuse_before_routing(login).has_value());
  auto foreign = login;
  foreign.origin = "http://attacker.example";
  BOOST_TEST(refuse_before_routing(foreign)->status == 403);
  auto tls_mismatch = login; // an http:// origin for a TLS console is another origin
  tls_mismatch.tls = true;
  BOOST_TEST(refuse_before_routing(tls_mismatch)->status == 403);
  auto no_origin = login;
  no_origin.origin = "";
  no_origin.sec_fetch_site = "cross-site";
  BOOST_TEST(refuse_before_routing(no_origin).has_value());
}

BOOST_AUTO_TEST_CASE(errors_keep_the_vocabulary_and_map_once_to_statuses) {
  BOOST_TEST(http_status(errc::not_found) == 404);
  BOOST_TEST(http_status(errc::permission_denied) == 403);
  BOOST_TEST(http_status(errc::invalid_argument) == 400);
  BOOST_TEST(http_status(errc::unavailable) == 503);
  BOOST_TEST(http_status(errc::resource_exhausted) == 429);
  BOOST_TEST(error_json({errc::not_found, "sandbox \"x\" does not exist"}) ==
             R"({"error":{"code":"not_found","message":"sandbox \"x\" does not exist"}})");
}

BOOST_AUTO_TEST_CASE(every_route_is_unique_and_only_sign_in_and_pages_need_no_session) {
  // /api/session says only whether the caller is signed in.
  std::set<std::string_view> names;
  for (const auto& r : routes()) {
    BOOST_TEST(names.insert(r.name).second, "route " << r.name << " twice");
    BOOST_TEST(std::regex_match(std::string(r.example.substr(0, r.example.find('?'))),
                                std::regex(std::string(r.pattern))),
               r.name << ": its example does not match its pattern");
    if (r.example.rfind("/api/", 0) == 0 && r.name != "login" && r.name != "session")
      BOOST_TEST(r.session, r.name << " answers without a session");
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(arguments)

BOOST_AUTO_TEST_CASE(list_filters_read_states_labels_and_pages) {
  query_params q{{"state", "running,paused"},
                 {"state", "failed"},
                 {"label", "team=ml"},
                 {"label", "k=a=b"},
                 {"page", "abc"},
                 {"limit", "20"},
                 {"deleted", "1"}};
  auto r = parse_list_request(q);
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r->filter.states == (std::vector<std::string>{"running", "paused", "failed"}));
  BOOST_REQUIRE(r->filter.labels.size() == 2u);
  BOOST_TEST(r->filter.labels[1].value == "a=b");
  BOOST_TEST(r->filter.page_token == "abc");
  BOOST_TEST(r->filter.limit == 20u);
  BOOST_TEST(r->filter.include_deleted);
  BOOST_TEST(parse_list_request({{"state", "sleeping"}}).code() == errc::invalid_argument);
  BOOST_TEST(parse_list_request({{"label", "=x"}}).code() == errc::invalid_argument);
  BOOST_TEST(parse_list_request({{"limit", "5000"}}).code() == errc::invalid_argument);
  BOOST_TEST(parse_list_request({{"limit", "1e3"}}).code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_bill_period_is_widened_to_whole_hours_and_defaults_to_the_month) {
  const events::time_point now{std::chrono::sys_days{std::chrono::year{2026} / 12 / 15} + 13h +
                               27min};
  auto d = parse_bill_request({}, now);
  BOOST_REQUIRE(d.ok());
  BOOST_TEST(d->from.time_since_epoch() ==
             std::chrono::sys_days{std::chrono::year{2026} / 12 / 1}.time_since_epoch());
  BOOST_TEST((d->to - now) == 33min);
  auto r = parse_bill_request({{"from", "2026-12-01T10:30:00Z"}, {"to", "-1h"}}, now);
  BOOST_REQUIRE(r.ok());
  BOOST_TEST((r->to - now) == 33min - 1h);
  BOOST_TEST(parse_bill_request({{"from", "now"}, {"to", "-2h"}}, now).code() ==
             errc::invalid_argument);
  BOOST_TEST(parse_bill_request({{"from", "yesterday"}}, now).code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(sequences_and_ids_are_checked) {
  BOOST_TEST(*parse_sequence({{"seq", "12"}}) == 12u);
  BOOST_TEST(parse_sequence({}).code() == errc::invalid_argument);
  BOOST_TEST(parse_sequence({{"seq", "0"}}).code() == errc::invalid_argument);
  BOOST_TEST(parse_sequence({{"seq", "-1"}}).code() == errc::invalid_argument);
  BOOST_TEST(plausible_sandbox_id("sb-0a1b2c3d4e5f"));
  BOOST_TEST(!plausible_sandbox_id("sb-1/../x"));
  BOOST_TEST(!plausible_sandbox_id("<script>"));
  BOOST_TEST(!plausible_sandbox_id(""));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(timelines)

BOOST_AUTO_TEST_CASE(bands_follow_the_folded_states_with_pause_modes) {
  sandbox_events s("sb-1", "acme", 1'000'000'000);
  s.created(512).after(1s).started().after(10s).pause(events::pause_mode::filesystem, 10);
  s.after(20s).resume().after(5s).pause(events::pause_mode::memory, 20).after(7s).resume();
  const auto steps = fold(s);
  const auto t = make_timeline(steps);
  std::vector<std::string> seen;
  for (const auto& b : t.bands)
    seen.push_back(b.status + (b.pause_mode.empty() ? "" : ":" + b.pause_mode));
  BOOST_TEST(seen == (std::vector<std::string>{"creating", "running", "pausing:filesystem",
                                               "paused:filesystem", "resuming:filesystem",
                                               "running", "pausing:memory", "paused:memory",
                                               "resuming:memory", "running"}));
  // Each band runs from the event that entered it to the one that left it.
  const auto& paused = t.bands[3];
  BOOST_TEST(paused.from_seq == 4u);
  BOOST_TEST(paused.to_seq == 5u);
  BOOST_TEST(paused.to_ns - paused.from_ns == std::chrono::nanoseconds(20s).count());
  BOOST_TEST(t.bands.back().open);
  BOOST_TEST(t.bands.back().to_seq == 0u);
}

BOOST_AUTO_TEST_CASE(execs_are_spans_with_their_outcome_and_overlaps_stack) {
  sandbox_events s("sb-2", "acme", 0);
  s.created(512).started();
  s.after(1s).exec("sleep 5");                  // x3, seq 3
  s.after(1s).exec("true");                     // x4, seq 4: overlaps x3
  s.after(1s).add(finished("x4", 0), "system"); // seq 5
  s.after(1s).add(finished("x3", 3), "system"); // seq 6
  s.after(1s).exec("late");                     // x7, still running
  s.after(1s).rejected(events::command_kind::pause_sandbox, events::errc::conflict, "no");
  const auto t = make_timeline(fold(s));
  BOOST_REQUIRE(t.spans.size() == 3u);
  BOOST_TEST(t.spans[0].outcome == "exit 3");
  BOOST_TEST(!t.spans[0].ok);
  BOOST_TEST(t.spans[0].to_seq == 6u);
  BOOST_TEST(t.spans[1].outcome == "exit 0");
  BOOST_TEST(t.spans[1].ok);
  BOOST_TEST(t.spans[0].row != t.spans[1].row);
  BOOST_TEST(t.spans[2].open);
  BOOST_TEST(t.spans[2].row == 0); // x3 and x4 ended before it started
  BOOST_TEST(t.exec_rows == 2);
  BOOST_TEST(t.lanes.back() == "rejected");
  BOOST_TEST(t.lanes[2] == "exec");
  BOOST_TEST(t.lanes[0] == "lifecycle");
}

BOOST_AUTO_TEST_CASE(the_state_at_an_event_is_replay_s_with_what_it_changed) {
  sandbox_events s("sb-3", "acme", 0);
  s.created(512, {{"team", "ml"}}).started().after(1s).pause(events::pause_mode::memory, 5);
  const auto steps = fold(s);
  const auto doc = state_at_json(steps, 3); // paused
  BOOST_TEST(doc["event"]["kind"] == "paused");
  BOOST_TEST(doc["state"]["status"] == "paused");
  BOOST_TEST(doc["state"]["pause_mode"] == "memory");
  BOOST_TEST(doc["state"]["label.team"] == "ml");
  bool status_changed = false;
  for (const auto& c : doc["changes"])
    status_changed = status_changed ||
                     (c["field"] == "status" && c["before"] == "pausing" && c["after"] == "paused");
  BOOST_TEST(status_changed, doc["changes"].dump());
}

BOOST_AUTO_TEST_CASE(a_redacted_history_shows_no_private_detail_at_any_point) {
  sandbox_events s("sb-4", "acme", 0);
  s.created(512, {{"owner", "secret-person"}}).started().exec("cat /secret/path");
  s.rejected(events::command_kind::read_file, events::errc::not_found, "/secret/path missing");
  s.remove().add(events::redacted{"GDPR-1"});
  const auto steps = fold(s);
  const auto doc = timeline_json(steps, make_timeline(steps));
  BOOST_TEST(doc["redacted"] == true);
  const std::string all = doc.dump();
  BOOST_TEST(all.find("secret") == std::string::npos, all);
  for (std::size_t i = 0; i < steps.size(); ++i)
    BOOST_TEST(state_at_json(steps, i).dump().find("secret") == std::string::npos);
  // Without the redaction the same history shows them (so the check above can fail).
  sandbox_events plain("sb-5", "acme", 0);
  plain.created(512, {{"owner", "secret-person"}}).started().exec("cat /secret/path");
  const auto p = fold(plain);
  BOOST_TEST(timeline_json(p, make_timeline(p)).dump().find("secret") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(front_end)

BOOST_AUTO_TEST_CASE(every_file_the_page_loads_is_compiled_in_and_no_code_writes_markup) {
  const auto* index = find_asset("index.html");
  BOOST_REQUIRE(index != nullptr);
  const std::string page(index->body);
  std::regex ref(R"re((?:src|href)="/assets/([^"]+)")re");
  int refs = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), ref); it != std::sregex_iterator();
       ++it, ++refs)
    BOOST_TEST(find_asset((*it)[1].str()) != nullptr, "index.html loads missing " << (*it)[1]);
  BOOST_TEST(refs >= 3);
  // Modules import each other by relative path: every import resolves to a compiled-in file.
  std::regex import(R"re((?:from|import\() *'\.\.?/([^']+)')re");
  for (const auto& a : all_assets()) {
    // The SVG namespace is a name, not an address anything is fetched from.
    const std::string body =
      std::regex_replace(std::string(a.body), std::regex("http://www\\.w3\\.org/2000/svg"), "SVG");
    BOOST_TEST(a.etag.size() == 34u);
    if (a.path.size() < 3 || a.path.substr(a.path.size() - 3) != ".js")
      continue;
    for (const char* sink : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
                             "eval(", "new Function", "http://", "https://"})
      BOOST_TEST(body.find(sink) == std::string::npos, a.path << " uses " << sink);
    const std::string dir = a.path.find('/') == std::string_view::npos
                              ? ""
                              : std::string(a.path.substr(0, a.path.find('/') + 1));
    for (auto it = std::sregex_iterator(body.begin(), body.end(), import);
         it != std::sregex_iterator(); ++it) {
      // "../x" (from pages/) is x at the top; "./x" is x beside the importing file.
      const bool up = (*it)[0].str().find("'../") != std::string::npos;
      const std::string target = up ? (*it)[1].str() : dir + (*it)[1].str();
      BOOST_TEST(find_asset(target) != nullptr, a.path << " imports missing " << target);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
