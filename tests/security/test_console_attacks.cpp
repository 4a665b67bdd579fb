// Attacks on the web console that must fail, against the console suite's one sandboxd and
// browser (tests/console/console_world.hpp; this file is built into test_console): another
// tenant's sandbox in the URL, every route without a session or with a forged one, the
// cookie's flags, the security headers and the CSP on every response, markup in every string
// a tenant controls (labels, argv, paths, messages) rendered as text, a rebound Host, another
// origin's sign-in, another site's reads, a wrong token, an oversized body, paths out of the
// assets.
#include "console/http_policy.hpp"
#include "console/routes.hpp"
#include "tests/console/console_world.hpp"

using namespace sandboxd;
using namespace sandboxd::test;

namespace {

httplib::Headers with_cookie(const std::string& cookie) {
  return {{"Cookie", cookie}};
}

// An answer's error document.
json error_of(const httplib::Result& r) {
  BOOST_REQUIRE_MESSAGE(r, "no answer");
  auto doc = json::parse(r->body, nullptr, false);
  BOOST_REQUIRE_MESSAGE(doc.is_object() && doc.contains("error"),
                        "not an error document: " << r->body);
  return doc["error"];
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(console_attacks, *utf::precondition(console_can_run))

BOOST_AUTO_TEST_CASE(another_tenant_s_sandbox_is_the_same_not_found_as_a_missing_one) {
  auto& w = world();
  auto c = w.http();
  const auto acme = with_cookie(w.session_cookie(k_token_acme));
  const std::string missing = "sb-000000000000";
  for (const std::string tail : {"/timeline", "/state?seq=1"}) {
    auto theirs = c->Get(("/api/sandboxes/" + w.other + tail).c_str(), acme);
    auto none = c->Get(("/api/sandboxes/" + missing + tail).c_str(), acme);
    BOOST_REQUIRE(theirs);
    BOOST_REQUIRE(none);
    BOOST_TEST(theirs->status == 404);
    BOOST_TEST(none->status == 404);
    BOOST_TEST(replace_all(theirs->body, w.other, "ID") == replace_all(none->body, missing, "ID"));
    BOOST_TEST(error_of(theirs)["code"] == "not_found");
    BOOST_TEST(theirs->body.find("globex") == std::string::npos);
  }
  // Globex itself sees it (so the 404 above is not just a broken route).
  auto globex = with_cookie(w.session_cookie(k_token_globex));
  BOOST_TEST(c->Get(("/api/sandboxes/" + w.other + "/timeline").c_str(), globex)->status == 200);
  // In the browser: the page of another tenant's sandbox is the missing one's page.
  auto p = w.signed_in_page(k_token_acme);
  std::string pages[2];
  int i = 0;
  for (const auto& id : {w.other, missing}) {
    p->navigate(w.url + "#/sandboxes/" + id);
    // Only a hash changes between the two: wait for this id's page, not the last one's.
    const std::string page = "document.querySelector('#sandbox-error') && "
                             "document.querySelector('main').textContent.includes('" +
                             id + "') && document.querySelector('main').textContent";
    pages[i++] = replace_all(p->wait_for(page, "the not-found page").get<std::string>(), id, "ID");
  }
  BOOST_TEST(pages[0] == pages[1]);
  BOOST_TEST(pages[0].find("No such sandbox") != std::string::npos, pages[0]);
  // Acme's token reaches no other tenant's list, bill, audit log or node figures.
  for (const std::string path :
       {"/api/sandboxes?tenant=globex", "/api/bill?tenant=globex", "/api/bill.csv?tenant=globex",
        "/api/audit?tenant=globex", "/api/audit/verify", "/api/node"}) {
    auto r = c->Get(path.c_str(), acme);
    BOOST_TEST(r->status == 403, path << ": " << r->status << " " << r->body);
    BOOST_TEST(error_of(r)["code"] == "permission_denied", path);
    BOOST_TEST(r->body.find("globex-only") == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(no_route_answers_without_a_live_session) {
  auto& w = world();
  auto c = w.http();
  const std::string forged(64, 'a');
  // A session that was real once: signed out.
  const std::string ended = w.session_cookie(k_token_acme);
  c->Post("/api/logout", with_cookie(ended), "", "application/json");
  const auto name = std::string(console::session_cookie_name(true));
  const std::vector<httplib::Headers> no_session{
    {},
    with_cookie(name + "=" + forged),
    with_cookie(ended),
    with_cookie("sandboxd_session=" + ended.substr(ended.find('=') + 1)), // the plain-HTTP name
    with_cookie(name + "=" + ended.substr(ended.find('=') + 1) + "0"),
  };
  int checked = 0;
  for (const auto& r : console::routes()) {
    if (!r.session)
      continue;
    for (const auto& h : no_session) {
      auto got = r.method == "GET"
                   ? c->Get(std::string(r.example).c_str(), h)
                   : c->Post(std::string(r.example).c_str(), h, "{}", "application/json");
      BOOST_REQUIRE(got);
      BOOST_TEST(got->status == 401, r.example << ": " << got->status << " " << got->body);
      BOOST_TEST(error_of(got)["code"] == "permission_denied");
      ++checked;
    }
  }
  BOOST_TEST(checked >= 40); // every route needing a session, five ways each
  // The browser without a session lands on the sign-in page, whatever it asked for.
  auto p = w.browser->new_page();
  p->navigate(w.url + "#/sandboxes/" + w.sb);
  p->wait_for("location.hash.startsWith('#/login') && document.querySelector('#token')",
              "the sign-in page");
  BOOST_TEST(p->eval("document.querySelector('main').textContent").get<std::string>().find(w.sb) ==
             std::string::npos);
  // A wrong token makes no session.
  auto wrong =
    c->Post("/api/login", {}, json{{"token", k_token_acme + "x"}}.dump(), "application/json");
  BOOST_TEST(wrong->status == 403);
  BOOST_TEST(error_of(wrong)["code"] == "permission_denied");
  BOOST_TEST(!wrong->has_header("Set-Cookie"));
}

BOOST_AUTO_TEST_CASE(the_session_cookie_is_host_only_http_only_strict_and_secure) {
  auto& w = world();
  auto c = w.http();
  auto r = c->Post("/api/login", {}, json{{"token", k_token_acme}}.dump(), "application/json");
  BOOST_REQUIRE(r);
  const auto set = r->get_header_value("Set-Cookie");
  BOOST_TEST(set.rfind("__Host-sandboxd_session=", 0) == 0, set);
  for (const char* flag : {"; HttpOnly", "; SameSite=Strict", "; Secure", "; Path=/"})
    BOOST_TEST(set.find(flag) != std::string::npos, set << " lacks " << flag);
  BOOST_TEST(set.find("Domain") == std::string::npos);
  // As the browser keeps it; and no script of the page can read it.
  auto p = w.signed_in_page(k_token_acme);
  bool found = false;
  for (const auto& k : p->cookies()) {
    if (k["name"] != "__Host-sandboxd_session")
      continue;
    found = true;
    BOOST_TEST(k["httpOnly"] == true);
    BOOST_TEST(k["secure"] == true);
    BOOST_TEST(k["sameSite"] == "Strict");
  }
  BOOST_TEST(found);
  BOOST_TEST(p->eval("document.cookie") == "");
}

BOOST_AUTO_TEST_CASE(every_response_has_the_csp_and_the_security_headers) {
  auto& w = world();
  auto c = w.http();
  const auto acme = with_cookie(w.session_cookie(k_token_acme));
  std::vector<std::string> paths{"/", "/assets/app.js", "/assets/console.css", "/no/such/page",
                                 "/assets/nope.js"};
  for (const auto& r : console::routes())
    if (r.method == "GET")
      paths.emplace_back(r.example);
  for (const auto& path : paths)
    for (const auto& h : {httplib::Headers{}, acme}) {
      auto got = c->Get(path.c_str(), h);
      BOOST_REQUIRE(got);
      for (const auto& [k, v] : console::security_headers())
        BOOST_TEST(got->get_header_value(k.c_str()) == v, path << " " << got->status << ": " << k);
      if (path.rfind("/api/", 0) == 0)
        BOOST_TEST(got->get_header_value("Cache-Control") == "no-store", path);
    }
  // What the policy does in the browser: markup, script text and inline handlers made from a
  // string throw (Trusted Types), whatever code asks. (Code the DevTools protocol evaluates
  // is exempt from script-src's eval rule, so that rule is checked on the header above.)
  auto p = w.signed_in_page(k_token_acme);
  const auto threw = [&](const std::string& statement) {
    return p->eval("(() => { try { " + statement +
                   "; return 'allowed'; } catch (e) { return "
                   "e.name; } })()");
  };
  BOOST_TEST(threw("document.body.insertAdjacentHTML('beforeend', '<b>x</b>')") == "TypeError");
  BOOST_TEST(threw("document.querySelector('main').innerHTML = '<b>x</b>'") == "TypeError");
  BOOST_TEST(threw("document.createElement('script').textContent = 'window.__inline = 1'") ==
             "TypeError");
  BOOST_TEST(threw("document.body.setAttribute('onclick', 'window.__inline = 1')") == "TypeError");
  BOOST_TEST(p->eval("document.querySelector('main b') === null") == true);
}

BOOST_AUTO_TEST_CASE(markup_in_every_string_a_tenant_controls_renders_as_text) {
  auto& w = world();
  auto p = w.signed_in_page(k_token_acme);
  // Nothing a tenant wrote may have become an element or run: the payloads set window.__xss,
  // and would add <img src=x>, <b>, <i>, <svg onload>, <script>, <iframe> elements.
  const std::string clean =
    "window.__xss === undefined && !document.querySelector('main img, main b, main i, main "
    "svg[onload], main script, main iframe')";
  const auto shows = [&](const std::string& text) {
    return p->eval("document.querySelector('main').textContent.includes(" + json(text).dump() +
                   ")") == true;
  };
  p->wait_for("document.querySelector('#sandbox-rows tr[data-id]')", "the list");
  BOOST_TEST(p->eval(clean) == true);
  BOOST_TEST(shows("note=<img src=x onerror=\"window.__xss=1\">")); // a label's value
  BOOST_TEST(shows("<i>k</i>=v"));                                  // a label's key
  p->navigate(w.url + "#/sandboxes/" + w.sb);
  p->wait_for("document.querySelector('main').dataset.rendered === 'timeline'", "the timeline");
  BOOST_TEST(p->eval(clean) == true);
  BOOST_TEST(shows("<script>window.__xss=2</script>"));            // an argv
  BOOST_TEST(shows("/workspace/<svg onload=window.__xss=3>.txt")); // a path
  BOOST_TEST(shows("<iframe src=x>"));                             // a refusal's message
  // Every event's detail (fields and state), one after another.
  const auto seqs = p->eval("[...document.querySelectorAll('#event-rows .row')].map((e) => "
                            "Number(e.dataset.seq))");
  for (const auto& seq : seqs) {
    const auto n = std::to_string(seq.get<int>());
    p->eval("document.querySelector('#event-rows .row[data-seq=\"" + n + "\"]').click()");
    p->wait_for("document.querySelector('#event-detail h2') && document.querySelector('#event-"
                "detail h2').textContent.startsWith('Event " +
                  n +
                  ":') && "
                  "document.querySelector('#event-state')",
                "event " + n + "'s detail");
    BOOST_TEST(p->eval(clean) == true, "after event " << n);
  }
  // The timeline's tooltips and span labels are SVG text nodes, never markup.
  BOOST_TEST(p->eval("[...document.querySelectorAll('#timeline title')].some((t) => "
                     "t.textContent.includes('<script>window.__xss=2</script>'))") == true);
  // The audit rows hold the same strings in their details.
  auto admin = w.signed_in_page(w.d->token());
  admin->navigate(w.url + "#/audit?tenant=acme&sandbox=" + w.sb);
  admin->wait_for("document.querySelector('main').dataset.rendered === 'audit'", "the audit page");
  BOOST_TEST(admin->eval(clean) == true);
  BOOST_TEST(admin->eval("document.querySelector('#audit-rows').textContent.includes('<iframe "
                         "src=x>')") == true);
  // The Billing page with a tenant name holding markup: shown as text in its heading.
  admin->navigate(w.url + "#/billing?tenant=%3Cimg%20src%3Dx%3E");
  admin->wait_for("document.querySelector('#bill-of')", "the bill");
  BOOST_TEST(admin->eval("document.querySelector('#bill-of').textContent") == "<img src=x>");
  BOOST_TEST(admin->eval(clean) == true);
  for (auto* page : {p.get(), admin.get()}) {
    const auto problems = page->take_problems();
    std::string all;
    for (const auto& x : problems)
      all += "\n  " + x;
    BOOST_TEST(problems.empty(), "the pages reported:" << all);
  }
}

BOOST_AUTO_TEST_CASE(a_rebound_host_another_origin_and_another_site_are_refused) {
  auto& w = world();
  auto c = w.http();
  const auto cookie = w.session_cookie(k_token_acme);
  // DNS rebinding: a name that resolved to 127.0.0.1 for another site's page.
  auto rebound = c->Get(
    "/api/sandboxes", {{"Host", "attacker.example:" + std::to_string(w.port)}, {"Cookie", cookie}});
  BOOST_TEST(rebound->status == 421);
  BOOST_TEST(rebound->body.find(w.sb) == std::string::npos);
  // A sign-in posted by another origin's page (login CSRF).
  auto foreign = c->Post("/api/login", {{"Origin", "https://attacker.example"}},
                         json{{"token", k_token_acme}}.dump(), "application/json");
  BOOST_TEST(foreign->status == 403);
  BOOST_TEST(!foreign->has_header("Set-Cookie"));
  // The same as a form post (no JSON): refused before any token is looked at.
  auto form =
    c->Post("/api/login", {}, "token=" + k_token_acme, "application/x-www-form-urlencoded");
  BOOST_TEST(form->status == 400);
  BOOST_TEST(!form->has_header("Set-Cookie"));
  // A read another site's page makes with the victim's cookie.
  auto cross = c->Get("/api/sandboxes", {{"Sec-Fetch-Site", "cross-site"}, {"Cookie", cookie}});
  BOOST_TEST(cross->status == 403);
  BOOST_TEST(cross->body.find(w.sb) == std::string::npos);
  // The same read from the console itself works.
  auto own = c->Get("/api/sandboxes", {{"Sec-Fetch-Site", "same-origin"}, {"Cookie", cookie}});
  BOOST_TEST(own->status == 200);
  BOOST_TEST(own->body.find(w.sb) != std::string::npos);
  // A body past the limit, and paths out of the assets.
  auto big = c->Post("/api/login", {}, std::string(64 * 1024, 'x'), "application/json");
  BOOST_TEST(big->status == 413);
  for (const char* path : {"/assets/../../etc/passwd", "/assets/..%2f..%2fetc%2fpasswd",
                           "/assets/%2e%2e/%2e%2e/etc/passwd", "/assets/index.html"}) {
    auto r = c->Get(path);
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status >= 400, path << ": " << r->status);
    BOOST_TEST(r->body.find("root:") == std::string::npos, path);
  }
}

BOOST_AUTO_TEST_SUITE_END()
