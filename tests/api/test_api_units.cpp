// The pure parts of the RPC layer: the error code's names and its mapping to and from Cap'n
// Proto exceptions, addresses, the token table, the tenant ledger's quota arithmetic and the
// languages `run` takes and the template upload's flow control.
#define BOOST_TEST_MODULE api_units
#include <boost/test/unit_test.hpp>

#include "api/address.hpp"
#include "api/code_language.hpp"
#include "api/convert.hpp"
#include "api/log_budget.hpp"
#include "api/rpc_error.hpp"
#include "api/tenant_ledger.hpp"
#include "api/token_authenticator.hpp"
#include "api/upload_pipe.hpp"

#include <capnp/message.h>
#include <kj/debug.h>

using namespace sandboxd;
using api::errc;

namespace {

events::event created(std::string id, std::string tenant, std::uint32_t mib, std::uint32_t disk) {
  events::event e;
  e.sandbox_id = std::move(id);
  e.tenant = std::move(tenant);
  e.sequence = 1;
  events::created c;
  c.limits.memory_mib = mib;
  c.limits.disk_mib = disk;
  e.body = c;
  return e;
}

events::event deleted(std::string id) {
  events::event e;
  e.sandbox_id = std::move(id);
  e.body = events::deleted{};
  return e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(api_units)

BOOST_AUTO_TEST_CASE(every_code_round_trips_through_an_rpc_exception) {
  for (std::uint16_t n = 1; n <= 10; ++n) {
    const auto code = static_cast<errc>(n);
    const api::error e{code, "sandbox sb-1 is paused; resume it first"};
    const auto ex = api::to_exception(e);
    BOOST_TEST(std::string(ex.getDescription().cStr()) == api::to_string(code) + ": " + e.message);
    const bool retry = code == errc::resource_exhausted || code == errc::unavailable;
    BOOST_TEST(
      (ex.getType() == (retry ? kj::Exception::Type::OVERLOADED : kj::Exception::Type::FAILED)));
    BOOST_TEST((api::from_exception(ex) == e));
  }
}

BOOST_AUTO_TEST_CASE(codes_keep_the_numbers_and_names_of_the_contract) {
  const char* names[] = {
    "not_found",   "conflict",        "permission_denied", "invalid_argument", "resource_exhausted",
    "unavailable", "not_a_directory", "is_a_directory",    "too_large",        "internal"};
  for (std::uint16_t n = 1; n <= 10; ++n) {
    BOOST_TEST(api::to_string(static_cast<errc>(n)) == names[n - 1]);
    BOOST_TEST((api::parse_errc(names[n - 1]) == static_cast<errc>(n)));
  }
  BOOST_TEST(!api::parse_errc("failed").has_value());
}

BOOST_AUTO_TEST_CASE(exceptions_without_a_code_are_unavailable) {
  auto lost = api::from_exception(KJ_EXCEPTION(DISCONNECTED, "peer went away"));
  BOOST_TEST((lost.code == errc::unavailable));
  BOOST_TEST(lost.message.find("peer went away") != std::string::npos);
  auto plain = api::from_exception(KJ_EXCEPTION(FAILED, "something: odd"));
  BOOST_TEST((plain.code == errc::unavailable));
  // A shutting-down daemon's DISCONNECTED is never read as the code in its text.
  auto shaped = api::from_exception(KJ_EXCEPTION(DISCONNECTED, "not_found: x"));
  BOOST_TEST((shaped.code == errc::unavailable));
  auto remote = api::from_exception(KJ_EXCEPTION(FAILED, "remote exception: conflict: busy"));
  BOOST_TEST((remote == api::error{errc::conflict, "busy"}));
}

BOOST_AUTO_TEST_CASE(addresses_parse_and_know_loopback) {
  auto u = api::parse_address("unix:/var/run/s.sock");
  BOOST_REQUIRE(u.ok());
  BOOST_TEST(u->path == "/var/run/s.sock");
  BOOST_TEST(u->loopback());
  auto t = api::parse_address("tcp:127.0.0.1:7000");
  BOOST_REQUIRE(t.ok());
  BOOST_TEST(t->port == 7000);
  BOOST_TEST(t->loopback());
  BOOST_TEST(t->str() == "tcp:127.0.0.1:7000");
  auto v6 = api::parse_address("tcp:[::1]:0");
  BOOST_REQUIRE(v6.ok());
  BOOST_TEST(v6->host == "::1");
  BOOST_TEST(v6->loopback());
  BOOST_TEST(v6->kj_form() == "[::1]:0");
  auto remote = api::parse_address("tcp:sandboxd.example:443");
  BOOST_REQUIRE(remote.ok());
  BOOST_TEST(!remote->loopback());
  for (const char* bad :
       {"", "unix:", "http://x", "tcp:host", "tcp:host:99999", "tcp::80", "tcp:[::1:80"})
    BOOST_TEST_CONTEXT(bad) {
      auto r = api::parse_address(bad);
      BOOST_TEST(!r.ok());
      if (!r.ok())
        BOOST_TEST((r.code() == errc::invalid_argument));
    }
}

BOOST_AUTO_TEST_CASE(token_table_knows_only_whole_tokens) {
  api::token_authenticator t;
  t.add("secret-token-1", {"acme", "ci", {"sandboxes"}});
  auto who = t.lookup("secret-token-1");
  BOOST_REQUIRE(who.has_value());
  BOOST_TEST(who->tenant == "acme");
  BOOST_TEST(who->has_scope("sandboxes"));
  BOOST_TEST(!who->has_scope("admin"));
  BOOST_TEST(!t.lookup("secret-token-").has_value());
  BOOST_TEST(!t.lookup("secret-token-10").has_value());
  BOOST_TEST(!t.lookup("").has_value());
}

BOOST_AUTO_TEST_CASE(ledger_counts_live_sandboxes_from_the_log) {
  api::tenant_ledger l({512, 1000, 512, 0});
  l.apply(created("s1", "t", 0, 0)); // zero memory: the default
  l.apply(created("s2", "t", 1024, 10));
  l.apply(created("s2", "t", 1024, 10)); // a duplicate record
  l.apply(created("x1", "other", 64, 0));
  BOOST_TEST((l.usage("t") == api::tenant_usage{2, 1536, 2000, 1024, 10}));
  l.apply(deleted("s1"));
  l.apply(deleted("s1"));
  l.apply(deleted("never"));
  BOOST_TEST((l.usage("t") == api::tenant_usage{1, 1024, 1000, 512, 10}));
  BOOST_TEST((l.usage("other") == api::tenant_usage{1, 64, 1000, 512, 0}));
}

BOOST_AUTO_TEST_CASE(ledger_reservations_hold_until_folded_or_released) {
  api::tenant_ledger l({512, 1000, 512, 0});
  const api::tenant_quota q{2, 2048, 0, 0, 0};
  events::sandbox_limits lim;
  lim.memory_mib = 1000;
  BOOST_TEST(l.reserve("t", "r1", lim, q).ok());
  BOOST_TEST(l.reserve("t", "r2", lim, q).ok());
  auto third = l.reserve("t", "r3", lim, q);
  BOOST_REQUIRE(!third.ok());
  BOOST_TEST((third.code() == errc::resource_exhausted));
  BOOST_TEST(third.err().message.find("sandbox quota") != std::string::npos);
  // r1's `created` arrives: it is counted once, not twice.
  l.apply(created("r1", "t", 1000, 0));
  BOOST_TEST((l.usage("t") == api::tenant_usage{2, 2000, 2000, 1024, 0}));
  l.release("r1"); // too late: it is folded, and stays
  BOOST_TEST(l.usage("t").sandboxes == 2u);
  l.release("r2"); // a failed create
  BOOST_TEST((l.usage("t") == api::tenant_usage{1, 1000, 1000, 512, 0}));
  events::sandbox_limits huge;
  huge.memory_mib = 1100;
  auto memory = l.reserve("t", "r4", huge, q);
  BOOST_REQUIRE(!memory.ok());
  BOOST_TEST(memory.err().message.find("memory quota") != std::string::npos);
  BOOST_TEST(l.reserve("t", "r4", lim, api::tenant_quota{}).ok()); // zero: unlimited
}

BOOST_AUTO_TEST_CASE(run_feeds_the_code_to_each_language_s_interpreter_on_stdin) {
  const std::vector<std::pair<std::string, std::string>> cases{
    {"python", "exec python3 -"}, {"Python3", "exec python3 -"}, {"py", "exec python3 -"},
    {"node", "exec node -"},      {"JavaScript", "exec node -"}, {"js", "exec node -"},
    {"bash", "exec bash -s"},     {"sh", "exec /bin/sh -s"}};
  for (const auto& [name, tail] : cases) {
    BOOST_TEST_CONTEXT(name) {
      auto l = api::code_language_of(name);
      BOOST_TEST_REQUIRE(l.ok());
      BOOST_TEST_REQUIRE(l->argv.size() == 3u);
      BOOST_TEST(l->argv[0] == "/bin/sh");
      BOOST_TEST(l->argv[1] == "-c");
      const auto& script = l->argv[2];
      BOOST_TEST(script.substr(script.size() - tail.size()) == tail);
      // The lookup comes first and names the program.
      BOOST_TEST(script.rfind("command -v " + l->program + " ", 0) == 0u);
    }
  }
  BOOST_TEST(api::code_language_of("python")->name == "python");
  BOOST_TEST(api::code_language_of("js")->name == "node");
  for (const char* bad : {"", "cobol", "python4", "sh; rm -rf /"}) {
    auto l = api::code_language_of(bad);
    BOOST_TEST_REQUIRE(!l.ok());
    BOOST_TEST((l.code() == errc::invalid_argument));
    BOOST_TEST(l.err().message == "unknown language '" + std::string(bad) +
                                    "'; the languages are python, node, bash, sh");
  }
}

BOOST_AUTO_TEST_CASE(the_log_budget_counts_the_last_hour_and_refuses_past_it) {
  using namespace std::chrono;
  api::log_budget b;
  const api::log_budget::time_point t0{hours(24 * 365 * 50) + minutes(7) + seconds(30)};
  // 1 MiB a minute for 60 minutes, tenant acme; globex a little.
  for (int m = 0; m < 60; ++m)
    b.spend("acme", 1u << 20, t0 + minutes(m));
  b.spend("globex", 4096, t0);
  const auto end = t0 + minutes(59);
  BOOST_TEST(b.used("acme", end) == 60u << 20);
  BOOST_TEST(b.used("globex", end) == 4096u);
  BOOST_TEST(b.used("initech", end) == 0u);
  // At its budget: refused, naming the budget and what to do; another tenant is not.
  auto r = b.admit("acme", 60, end);
  BOOST_TEST_REQUIRE(!r.ok());
  BOOST_TEST((r.code() == errc::resource_exhausted));
  BOOST_TEST(r.err().message.find("tenant acme has put 60 MiB into the event log in the last "
                                  "hour, its budget is 60 MiB per hour") == 0u,
             r.err().message);
  BOOST_TEST(r.err().message.find("--quota-log-mib-per-hour") != std::string::npos);
  BOOST_TEST(b.admit("acme", 61, end).ok());
  BOOST_TEST(b.admit("acme", 0, end).ok()); // no budget
  BOOST_TEST(b.admit("globex", 1, end).ok());
  // A minute later the first minute has left the hour; an hour later nothing counts.
  BOOST_TEST(b.used("acme", end + minutes(1)) == 59u << 20);
  BOOST_TEST(b.admit("acme", 60, end + minutes(1)).ok());
  BOOST_TEST(b.used("acme", end + minutes(60)) == 0u);
  // A new minute reuses the slot of the minute an hour before it, from zero.
  b.spend("acme", 10, end + minutes(1));
  BOOST_TEST(b.used("acme", end + minutes(1)) == (59u << 20) + 10u);
  // A record older than the hour (as of the newest) counts for nothing.
  b.spend("acme", 1u << 30, end + minutes(1) - minutes(60));
  BOOST_TEST(b.used("acme", end + minutes(1)) == (59u << 20) + 10u);
}

BOOST_AUTO_TEST_CASE(the_ledger_charges_each_record_to_its_event_s_tenant) {
  api::tenant_ledger ledger;
  api::tenant_quota q;
  q.log_mib_per_hour = 1;
  auto e = created("sb-1", "acme", 512, 0);
  e.occurred_at =
    std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
  ledger.apply(e, 600u << 10);
  BOOST_TEST(ledger.admit_log("acme", q, std::chrono::system_clock::now()).ok());
  auto d = deleted("sb-1");
  d.tenant = "acme";
  d.occurred_at = e.occurred_at;
  ledger.apply(d, 600u << 10);
  BOOST_TEST(ledger.log_bytes_last_hour("acme", std::chrono::system_clock::now()) == 1200u << 10);
  BOOST_TEST(!ledger.admit_log("acme", q, std::chrono::system_clock::now()).ok());
  BOOST_TEST(ledger.admit_log("globex", q, std::chrono::system_clock::now()).ok());
}

BOOST_AUTO_TEST_SUITE_END()

// The template upload's pipe: every write that waits for room is let go exactly once, when the
// worker has drained the queue below the low mark (a dropped waker stalled a 200 MiB import at
// 16 MiB for ever), and a quiet upload ends the worker's wait.
BOOST_AUTO_TEST_SUITE(upload_pipe_flow)

BOOST_AUTO_TEST_CASE(a_write_that_waits_goes_on_once_the_queue_is_below_the_low_mark) {
  api::upload_pipe pipe;
  int asked = 0, woken = 0;
  auto wait = [&] {
    ++asked;
    return api::upload_pipe::waker([&](bool) { ++woken; });
  };
  const std::string mib(1u << 20, 'x');
  int pushed = 0;
  while (pipe.push(mib, wait))
    ++pushed;
  ++pushed;
  BOOST_TEST(pushed == 16); // the 16th MiB reaches the high mark
  BOOST_TEST(asked == 1);
  const void* data = nullptr;
  std::string why;
  std::size_t left = 16u << 20;
  while (left >= api::upload_pipe::k_low + mib.size()) {
    BOOST_TEST_REQUIRE(pipe.pull(&data, &why) == static_cast<long>(mib.size()));
    left -= mib.size();
    BOOST_TEST_REQUIRE(woken == 0, "woken with " << left << " bytes queued");
  }
  BOOST_TEST_REQUIRE(pipe.pull(&data, &why) == static_cast<long>(mib.size()));
  BOOST_TEST(woken == 1); // below the low mark now
  pipe.close();
  for (int i = 0; i < 7; ++i)
    BOOST_TEST_REQUIRE(pipe.pull(&data, &why) == static_cast<long>(mib.size()));
  BOOST_TEST(pipe.pull(&data, &why) == 0);
  BOOST_TEST(woken == 1);
}

BOOST_AUTO_TEST_CASE(the_end_of_the_import_lets_a_waiting_write_go_on) {
  api::upload_pipe pipe;
  int woken = 0;
  auto wait = [&] { return api::upload_pipe::waker([&](bool) { ++woken; }); };
  while (pipe.push(std::string(4u << 20, 'x'), wait)) {
  }
  pipe.reader_done();
  BOOST_TEST(woken == 1);
  BOOST_TEST(pipe.push("more", wait)); // dropped: the import's answer says why
}

BOOST_AUTO_TEST_CASE(an_upload_that_sends_nothing_for_its_idle_time_fails_the_pull) {
  api::upload_pipe pipe(std::chrono::milliseconds(50));
  const void* data = nullptr;
  std::string why;
  BOOST_TEST(pipe.pull(&data, &why) == -1);
  BOOST_TEST(why == "no bytes of the archive arrived for 50 ms; the import was stopped");
  api::upload_pipe dropped;
  dropped.fail("the upload was dropped before its commit");
  BOOST_TEST(dropped.pull(&data, &why) == -1);
  BOOST_TEST(why == "the upload was dropped before its commit");
}

BOOST_AUTO_TEST_SUITE_END()

namespace {
// A NetworkPolicy as a client sends it.
result<events::network_policy> sent_policy(schema::NetworkPolicy::Mode mode,
                                           std::vector<std::string> hosts) {
  capnp::MallocMessageBuilder m;
  auto p = m.initRoot<schema::NetworkPolicy>();
  p.setMode(mode);
  auto h = p.initAllowedHosts(static_cast<unsigned>(hosts.size()));
  for (unsigned i = 0; i < hosts.size(); ++i)
    h.set(i, hosts[i]);
  return api::network_of(p.asReader());
}
} // namespace

BOOST_AUTO_TEST_CASE(a_network_policy_is_parsed_into_canonical_rules_or_refused) {
  using M = schema::NetworkPolicy::Mode;
  auto p = sent_policy(M::ALLOW_LIST, {"API.GitHub.com.", "10.20.0.0/16:5432", "*.pypi.org:443"});
  BOOST_REQUIRE(p.ok());
  BOOST_TEST((p.value().mode == events::network_mode::allow_list));
  BOOST_TEST(p.value().allowed_hosts.size() == 3u);
  BOOST_TEST(p.value().allowed_hosts[0] == "api.github.com");
  auto bad = sent_policy(M::ALLOW_LIST, {"ok.test", "10.1.2.3/16"});
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.err().code == errc::invalid_argument);
  BOOST_TEST(bad.err().message.find("10.1.2.3/16") != std::string::npos, bad.err().message);
  BOOST_TEST(!sent_policy(M::NONE, {"ok.test"}).ok()); // none takes no rules
  BOOST_TEST(!sent_policy(M::ALLOW_LIST, {"*"}).ok());
  std::vector<std::string> many(300, "a.test");
  auto too_many = sent_policy(M::ALLOW_LIST, many);
  BOOST_REQUIRE(!too_many.ok());
  BOOST_TEST(too_many.err().message.find("at most 256") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_policy_above_the_tenant_s_ceiling_is_permission_denied) {
  using M = schema::NetworkPolicy::Mode;
  network::ceiling lists_only;
  lists_only.widest = events::network_mode::allow_list;
  auto all = sent_policy(M::FULL, {});
  BOOST_REQUIRE(all.ok());
  auto r = api::network_within_ceiling(all.value(), lists_only, "t1");
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.err().code == errc::permission_denied);
  BOOST_TEST(r.err().message.find("t1") != std::string::npos);
  auto list = sent_policy(M::ALLOW_LIST, {"pypi.org:443"});
  BOOST_TEST(api::network_within_ceiling(list.value(), lists_only, "t1").ok());
  network::ceiling within = lists_only;
  within.within.push_back(network::parse_rule("*.example.test").value());
  BOOST_TEST(!api::network_within_ceiling(list.value(), within, "t1").ok());
  auto inside = sent_policy(M::ALLOW_LIST, {"api.example.test:443"});
  BOOST_TEST(api::network_within_ceiling(inside.value(), within, "t1").ok());
  network::ceiling nothing;
  nothing.widest = events::network_mode::none;
  BOOST_TEST(!api::network_within_ceiling(list.value(), nothing, "t1").ok());
  auto none = sent_policy(M::NONE, {});
  BOOST_TEST(api::network_within_ceiling(none.value(), nothing, "t1").ok());
}
