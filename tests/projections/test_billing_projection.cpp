// Bills from projected streams, against figures worked out by hand (not a second run of the
// same code): a sandbox that goes through every event kind (snapshot_taken, a template event
// and a payload of a newer version included), a layer held 5 minutes and billed from the size
// its `deleted` measured, the published example, the per-line rounding and a tenant's own
// template billed as storage from its `ready` to its `deleted`. The stream is
// appended to a real file_log and projected into a real PostgreSQL in small batches.
#define BOOST_TEST_MODULE billing_projection
#include <boost/test/unit_test.hpp>

#include "projections/billing_report.hpp"
#include "projections/projector.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/projections/log_under_test.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/pg_server.hpp"

#include <pqxx/pqxx>

#include <set>
#include <string_view>

using namespace std::chrono_literals;
using namespace sandboxd;
using namespace sandboxd::projections;
using sandboxd::test::pg_server;
using sandboxd::test::sandbox_events;

namespace {

constexpr std::int64_t gib = bytes_per_gib;
constexpr std::int64_t hour_ms = ms_per_hour;
constexpr std::int64_t minute_ms = 60'000;
// An hour boundary; the sandboxes start 17 minutes later, so their intervals straddle hours.
constexpr std::int64_t t0_ms = 472'222 * hour_ms;
constexpr std::int64_t t0_ns = t0_ms * 1'000'000;

struct fixture {
  test::log_under_test log;
  std::string schema = "bill_" + log.name();
  std::string conninfo = pg_server::shared().conninfo();
  pqxx::connection conn{conninfo};

  void project(const std::vector<events::event>& stream) {
    test::append_all(*log, stream);
    projector_options o;
    o.schema = schema;
    o.max_batch = 5; // batch boundaries inside every sandbox's history
    projector p(*log, conninfo, o);
    p.catch_up();
  }
  bill report(const std::string& tenant, std::int64_t from_ms, std::int64_t to_ms) {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    auto r = billing_report(tx, tenant, from_ms, to_ms);
    BOOST_TEST_REQUIRE(r.value.has_value(), (r.failure ? r.failure->message : ""));
    return *r.value;
  }
};

// sb-all (tenant acme), 2 GiB of memory, starting at t0 + 17 min = T, every event kind:
//   seq  1 created (2048 MiB)      T          seq 14 connection_opened        T+2h
//   seq  2 started                 T          seq 15 connection_denied        T+2h
//   seq  3 storage_sampled 1 GiB   T          seq 16 connection_closed        T+2h
//   seq  4 exec_started            T+1h       seq 17 pause_requested (memory) T+3h
//   seq  5 exec_finished           T+1h       seq 18 paused (memory, 2 GiB)   T+3h
//   seq  6 file_written            T+1h       seq 19 command_rejected (exec)  T+4h
//   seq  7 file_read               T+1h       seq 20 a newer version's kind   T+4h30m
//   seq  8 file_op_requested       T+1h       seq 21 resume_requested         T+5h
//   seq  9 file_op_finished        T+1h       seq 22 resumed                  T+5h
//   seq 10 exec_kill_requested     T+1h       seq 23 failed (running)         T+6h
//   seq 11 snapshot_taken 3 GiB    T+2h       seq 24 delete_requested         T+7h
//   seq 12 timeout_changed         T+2h       seq 25 deleted (layer 4 GiB)    T+7h
//   seq 13 network_changed         T+2h       seq 26 redacted                 T+8h
// and, after it all (so that the sequence numbers above stay), seq 27 snapshot_requested and
// seq 28 snapshot_deleted at T+8h: neither carries a reading, so neither bills. Then a pool
// sandbox of another tenant's: created, started, claimed by beta.
std::vector<events::event> every_kind() {
  using namespace events;
  sandbox_events s("sb-all", "acme", t0_ns);
  s.after(17min).created(2048).started().sampled(1 * gib);
  s.after(1h).exec("make test");
  exec_finished done;
  done.exec_id = "x4";
  done.exit_code = 0;
  done.duration = 3s;
  s.add(done, "system");
  file_written w;
  w.path = "/workspace/out.txt";
  w.bytes = 4096;
  w.sha256[0] = 0xab;
  s.add(w);
  s.add(file_read{"/workspace/out.txt", 4096});
  file_op_requested op;
  op.op_id = "op-1";
  op.kind = file_op_kind::make_dir;
  op.path = "/workspace/d";
  s.add(op);
  file_op_finished op_done;
  op_done.op_id = "op-1";
  op_done.kind = file_op_kind::make_dir;
  s.add(op_done, "system");
  s.add(exec_kill_requested{"x4", 15});
  s.after(1h).add(snapshot_taken{"snap-1", 3 * gib}, "system");
  timeout_changed t;
  t.timeouts.idle_timeout = 15min;
  s.add(t);
  s.add(network_changed{{network_mode::allow_list, {"pypi.org"}}});
  net_destination to{net_protocol::tcp, "pypi.org", name_source::tls_sni, "198.51.100.7", 443,
                     "public",          true};
  s.add(connection_opened{"c1", to, "pypi.org"}, "system");
  to.name = "evil.example";
  s.add(connection_denied{to, "evil.example is not in the sandbox's allow list"}, "system");
  connection_closed closed;
  closed.connection_id = "c1";
  closed.bytes_in = 1 << 20;
  s.add(closed, "system");
  s.after(1h).pause(pause_mode::memory, 2 * gib);
  s.after(1h).rejected(command_kind::exec, errc::conflict,
                       "sandbox sb-all is paused; resume it before exec");
  s.after(30min).add(unknown{40}, "system");
  s.after(30min).resume();
  s.after(1h).fail("runsc exited 137");
  s.after(1h).remove(4 * gib);
  s.after(1h).add(redacted{"privacy request 12"});
  s.add(snapshot_requested{"op-snap-00000000000000a1", "snap-00000000000000a1", "before"},
        "system");
  s.add(snapshot_deleted{"snap-00000000000000a1"});
  // A template the tenant built, on the templates' own stream, between sb-all's snapshot and
  // its pause: it bills nothing and moves none of sb-all's intervals.
  sandbox_events templates(std::string(template_stream_key), "acme", t0_ns);
  templates.after(17min + 2h)
    .add(template_event{"tpl-1", "py", template_scope::tenant, template_created{}}, "alice");
  auto all = s.events();
  all.insert(all.begin() + 11, templates.events().front());
  // A warm pool's sandbox claimed by another tenant (claim_requested, claimed): its bill is
  // beta's from the claim (test_api_pool_runtime) and moves none of acme's.
  sandbox_events pooled("sb-pool", std::string(events::k_pool_tenant), t0_ns);
  pooled.pool_created(512, "base/crun/m512/c1000/p256/d10240").started();
  pooled.after(8h + 30min).claimed_by("beta");
  for (auto& e : pooled.events())
    all.push_back(std::move(e));
  return all;
}

} // namespace

BOOST_AUTO_TEST_SUITE(postgres, *boost::unit_test::precondition(sandboxd::test::postgres_installed))

BOOST_FIXTURE_TEST_CASE(every_event_kind_bills_what_was_worked_out_by_hand, fixture) {
  const auto stream = every_kind();
  BOOST_TEST_REQUIRE(stream.size() == 33u);
  std::set<std::string_view> kinds;
  for (const auto& e : stream)
    kinds.insert(events::type_name(e.body));
  for (auto k : events::payload_type_names())
    BOOST_TEST(kinds.count(k) == 1u, "the stream lacks " << k);
  BOOST_TEST(kinds.count("unknown") == 1u);
  project(stream);

  // The whole life, in hours t0 .. t0+8h.
  auto b = report("acme", t0_ms, t0_ms + 8 * hour_ms);
  BOOST_TEST_REQUIRE(b.lines.size() == 1u);
  const auto& l = b.lines[0];
  BOOST_TEST(l.sandbox_id == "sb-all");
  // Compute, 2 GiB while running: started T .. pause_requested T+3h, resumed T+5h ..
  // failed T+6h: 2 GiB × 4 h = 8 GiB·h = 8 × 2^30 B × 3,600,000 ms = 30,923,764,531,200,000
  // byte-ms; 8 GiB·h × 15,000 µ$ = 120,000 µ$.
  BOOST_TEST(usage_to_string(l.compute_byte_ms) == "30923764531200000");
  BOOST_TEST(l.compute_micro_usd == 120'000);
  // Storage, each interval at the larger of its two readings: created (0) T .. sampled 1 GiB
  // T (no length), sampled 1 GiB T .. snapshot_taken 3 GiB T+2h: 3 × 2; snapshot_taken 3 GiB
  // .. paused 2 GiB T+3h: 3 × 1; paused 2 GiB .. deleted 4 GiB T+7h: 4 × 4. 6 + 3 + 16 =
  // 25 GiB·h = 25 × 2^30 × 3,600,000 = 96,636,764,160,000,000 byte-ms;
  // 25 GiB·h × 20,000 µ$ / 730 h = 684.93… µ$, rounded half up: 685 µ$.
  BOOST_TEST(usage_to_string(l.storage_byte_ms) == "96636764160000000");
  BOOST_TEST(l.storage_micro_usd == 685);
  BOOST_TEST(b.total_micro_usd == 120'685);
  // The events that opened and closed each interval: compute 2→17, 22→23; storage 3→11,
  // 11→18, 18→25 (created→sampled, 1→3, has no length and no row).
  BOOST_TEST(
    (l.event_ids == std::vector<std::string>{"sb-all:2", "sb-all:3", "sb-all:11", "sb-all:17",
                                             "sb-all:18", "sb-all:22", "sb-all:23", "sb-all:25"}));

  // Two hours of it, [t0+2h, t0+4h) (T = t0+17m):
  // compute: T .. T+3h overlaps t0+2h .. t0+3h17m = 77 min: 2 GiB × 77 min = 154 GiB·min,
  //   × 15,000 µ$ / 60 = 38,500 µ$;
  // storage: 3 GiB over t0+2h .. t0+2h17m (17 min) + 3 GiB over t0+2h17m .. t0+3h17m (60 min)
  //   + 4 GiB over t0+3h17m .. t0+4h (43 min) = 51 + 180 + 172 = 403 GiB·min,
  //   × 20,000 µ$ / (60 × 730) = 184.02 µ$ → 184 µ$.
  auto part = report("acme", t0_ms + 2 * hour_ms, t0_ms + 4 * hour_ms);
  BOOST_TEST_REQUIRE(part.lines.size() == 1u);
  BOOST_TEST(usage_to_string(part.lines[0].compute_byte_ms) ==
             usage_to_string(usage_t{154} * gib * minute_ms));
  BOOST_TEST(part.lines[0].compute_micro_usd == 38'500);
  BOOST_TEST(usage_to_string(part.lines[0].storage_byte_ms) ==
             usage_to_string(usage_t{403} * gib * minute_ms));
  BOOST_TEST(part.lines[0].storage_micro_usd == 184);
  BOOST_TEST(part.total_micro_usd == 38'684);
  // The intervals touching those hours: compute 2→17, storage 3→11, 11→18 and 18→25.
  BOOST_TEST(
    (part.lines[0].event_ids == std::vector<std::string>{"sb-all:2", "sb-all:3", "sb-all:11",
                                                         "sb-all:17", "sb-all:18", "sb-all:25"}));
}

// The case: a 3 GiB layer written after the start and deleted 5 minutes later, no
// sample between. Storage runs from `created` (0 bytes) to `deleted`, which measured 3 GiB,
// billed at the larger reading: 3 GiB × 5 min, priced by docs/billing.md's formula
// (storage µ$ = usage × rate / (2^30 × month_hours × 3,600,000), rounded half up), worked out
// here rather than by billing.hpp.
BOOST_FIXTURE_TEST_CASE(a_layer_held_five_minutes_bills_its_bytes_for_five_minutes, fixture) {
  sandbox_events s("sb-brief", "brief", t0_ns);
  s.after(17min).created(1024).started();
  s.after(5min).remove(3 * gib);
  project(s.events());

  auto b = report("brief", t0_ms, t0_ms + hour_ms);
  BOOST_TEST_REQUIRE(b.lines.size() == 1u);
  const auto& l = b.lines[0];
  const __int128 usage = __int128{3} * gib * (5 * minute_ms);
  BOOST_TEST(usage_to_string(l.storage_byte_ms) == usage_to_string(usage));
  const __int128 rate = 20'000, month_hours = 730;
  const __int128 per = __int128{gib} * month_hours * 3'600'000;
  const auto expected = static_cast<std::int64_t>((usage * rate + per / 2) / per);
  BOOST_TEST(expected == 7); // 3 × 5 / 60 GiB·h × 20,000 / 730 = 6.85 µ$
  BOOST_TEST(l.storage_micro_usd == expected);
  // Compute: 1 GiB × 5 min × 15,000 µ$ / 60 = 1,250 µ$.
  BOOST_TEST(l.compute_micro_usd == 1'250);
  BOOST_TEST(b.total_micro_usd == 1'250 + expected);
  // compute started→delete_requested (2→3), storage created→deleted (1→4).
  BOOST_TEST((l.event_ids ==
              std::vector<std::string>{"sb-brief:1", "sb-brief:2", "sb-brief:3", "sb-brief:4"}));
}

// docs/billing.md: a 4 GiB sandbox running 10 hours, its 20 GiB writable layer kept 730 hours
// from its creation (the run and a pause of 720 hours) to its deletion: $0.60 + $0.40 = $1.00.
BOOST_FIXTURE_TEST_CASE(the_published_example_bills_one_dollar, fixture) {
  sandbox_events s("sb-example", "example", t0_ns);
  s.after(17min).created(4096).started();
  s.after(10h).pause(events::pause_mode::filesystem, 20 * gib);
  s.after(720h).remove(20 * gib);
  project(s.events());

  auto b = report("example", t0_ms, t0_ms + 731 * hour_ms);
  BOOST_TEST_REQUIRE(b.lines.size() == 1u);
  // 4 GiB × 10 h = 40 GiB·h × 15,000 µ$ = 600,000 µ$.
  BOOST_TEST(b.lines[0].compute_micro_usd == 600'000);
  // created (0) .. paused (20 GiB): 20 GiB × 10 h, at the larger reading; paused .. deleted
  // (20 GiB): 20 GiB × 720 h. 20 GiB × 730 h = 14,600 GiB·h × 20,000 µ$ / 730 h = 400,000 µ$.
  BOOST_TEST(b.lines[0].storage_micro_usd == 400'000);
  BOOST_TEST(b.total_micro_usd == 1'000'000);
  BOOST_TEST(format_dollars(b.total_micro_usd) == "1.000000");
}

// Rounding is per line: two sandboxes each computing 1 GiB for 120 ms (1/30,000 GiB·h =
// 0.5 µ$ each) bill 1 µ$ each, 2 µ$ together — not the 1 µ$ of their summed usage.
BOOST_FIXTURE_TEST_CASE(each_line_is_rounded_on_its_own, fixture) {
  std::vector<events::event> stream;
  for (const char* id : {"sb-half-1", "sb-half-2"}) {
    sandbox_events s(id, "rounding", t0_ns);
    s.created(1024).started().after(120ms).remove();
    stream.insert(stream.end(), s.events().begin(), s.events().end());
  }
  project(stream);
  auto b = report("rounding", t0_ms, t0_ms + hour_ms);
  BOOST_TEST_REQUIRE(b.lines.size() == 2u);
  for (const auto& l : b.lines) {
    BOOST_TEST(usage_to_string(l.compute_byte_ms) == usage_to_string(usage_t{gib} * 120));
    BOOST_TEST(l.compute_micro_usd == 1);
    BOOST_TEST(l.storage_micro_usd == 0);
  }
  BOOST_TEST(b.total_micro_usd == 2);
}

// docs/billing.md, "Templates": a tenant imports a template whose layers take 2 GiB and keeps
// it 720 hours (30 days) from its `ready` to its `deleted`: 2 GiB × 720 h = 1,440 GiB·h ×
// 20,000 µ$ / 730 h = 39,452.05 µ$, rounded half up: 39,452 µ$. A global template of 5 GiB made
// by the operator in the same hours bills nobody, and the tenant's sandbox on the template
// bills its writable layer only (1 GiB from its creation to its deletion 10 hours later:
// 10 GiB·h × 20,000 / 730 = 273.97 → 274 µ$; and 1 GiB × 10 h of compute: 150,000 µ$).
BOOST_FIXTURE_TEST_CASE(a_tenant_template_bills_its_layers_from_ready_to_deleted, fixture) {
  using namespace events;
  const std::string own = "tpl_00000000000000aa", global = "tpl_00000000000000bb";
  sandbox_events t(std::string(template_stream_key), "tpl-tenant", t0_ns);
  auto layer = [](std::uint64_t bytes) {
    template_layer_added a;
    a.bytes = bytes;
    return a;
  };
  auto ready = [](std::uint64_t bytes) {
    template_ready r;
    r.layers = {{{}, bytes}, {{}, 0}};
    r.total_bytes = bytes;
    return r;
  };
  t.after(17min).add(template_event{own, "app", template_scope::tenant, template_created{}});
  t.add(template_event{own, "app", template_scope::tenant, layer(2 * gib)});
  t.add(template_event{own, "app", template_scope::tenant, layer(0)});
  t.after(3min).add(template_event{own, "app", template_scope::tenant, ready(2 * gib)}); // seq 4
  t.add(template_event{global, "py", template_scope::global, template_created{}}, "root");
  t.add(template_event{global, "py", template_scope::global, layer(5 * gib)}, "root");
  t.add(template_event{global, "py", template_scope::global, ready(5 * gib)}, "root");
  t.after(720h).add(
    template_event{own, "app", template_scope::tenant, template_deleted{"user"}}); // seq 8
  t.add(template_event{global, "py", template_scope::global, template_deleted{"user"}}, "root");
  auto stream = t.events();
  for (auto& e : stream)
    if (e.principal == "root")
      e.tenant = "operator";
  sandbox_events sb("sb-on-app", "tpl-tenant", t0_ns);
  sb.after(20min).created(1024, {}, "app").started();
  sb.after(10h).remove(1 * gib);
  stream.insert(stream.end(), sb.events().begin(), sb.events().end());
  project(stream);

  auto b = report("tpl-tenant", t0_ms, t0_ms + 721 * hour_ms);
  BOOST_TEST_REQUIRE(b.lines.size() == 2u);
  const auto& tl = b.lines[1].sandbox_id == own ? b.lines[1] : b.lines[0];
  const auto& sl = b.lines[1].sandbox_id == own ? b.lines[0] : b.lines[1];
  BOOST_TEST(tl.sandbox_id == own);
  BOOST_TEST(usage_to_string(tl.storage_byte_ms) ==
             usage_to_string(usage_t{2} * gib * (720 * hour_ms)));
  BOOST_TEST(tl.storage_micro_usd == 39'452);
  BOOST_TEST(tl.compute_micro_usd == 0);
  // The events of the template stream that opened and closed it: ready and deleted.
  BOOST_TEST((tl.event_ids == std::vector<std::string>{"@templates:4", "@templates:8"}));
  BOOST_TEST(sl.sandbox_id == "sb-on-app");
  BOOST_TEST(sl.storage_micro_usd == 274);
  BOOST_TEST(sl.compute_micro_usd == 150'000);
  BOOST_TEST(b.total_micro_usd == 39'452 + 274 + 150'000);
  BOOST_TEST(report("operator", t0_ms, t0_ms + 721 * hour_ms).lines.empty());
}

// docs/billing.md, "Templates": a template built FROM another bills only the layers it adds.
// The tenant's spec build on the global 5 GiB `py` adds 1 GiB (its `ready` holds 6 GiB of
// layers, own bytes 1 GiB) and keeps it 720 hours: 720 GiB·h × 20,000 µ$ / 730 h = 19,726.03,
// 19,726 µ$ — not the 118,356 µ$ of all six.
BOOST_FIXTURE_TEST_CASE(a_template_built_on_another_bills_only_the_layers_it_adds, fixture) {
  using namespace events;
  const std::string own = "tpl_00000000000000cc";
  sandbox_events t(std::string(template_stream_key), "tpl-builder", t0_ns);
  template_created c;
  c.source = template_source::spec;
  c.parent_id = "tpl_00000000000000bb";
  template_ready r;
  r.layers = {{{}, 5 * gib}, {{}, 1 * gib}, {{}, 0}};
  r.total_bytes = 6 * gib;
  r.own_bytes = 1 * gib;
  t.after(17min).add(template_event{own, "app", template_scope::tenant, c});
  t.after(3min).add(template_event{own, "app", template_scope::tenant, r});
  t.after(720h).add(template_event{own, "app", template_scope::tenant, template_deleted{"user"}});
  project(t.events());
  auto b = report("tpl-builder", t0_ms, t0_ms + 721 * hour_ms);
  BOOST_TEST_REQUIRE(b.lines.size() == 1u);
  BOOST_TEST(usage_to_string(b.lines[0].storage_byte_ms) ==
             usage_to_string(usage_t{1} * gib * (720 * hour_ms)));
  BOOST_TEST(b.lines[0].storage_micro_usd == 19'726);
}

BOOST_AUTO_TEST_SUITE_END()
