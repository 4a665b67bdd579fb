// The read models projected from a real log (file_log, or kafka_log on the real broker)
// into a real PostgreSQL: rows a lifecycle stream produces, duplicates that change nothing,
// audit verification against hand edits, and a rebuild that matches the live tables.
#define BOOST_TEST_MODULE read_models
#include <boost/test/unit_test.hpp>

#include "projections/audit_log.hpp"
#include "projections/billing_report.hpp"
#include "projections/migrations.hpp"
#include "projections/projector.hpp"
#include "projections/rebuild.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/projections/log_under_test.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/pg_server.hpp"

#include <pqxx/pqxx>

#include <atomic>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace sandboxd;
using namespace sandboxd::projections;
using sandboxd::test::pg_server;
using sandboxd::test::sandbox_events;

namespace {

constexpr std::int64_t gib = bytes_per_gib;
constexpr std::int64_t minute_ms = 60'000;
// An hour boundary, so the expected hour buckets are easy to state.
constexpr std::int64_t t0_ms = 472'222 * ms_per_hour;
constexpr std::int64_t t0_ns = t0_ms * 1'000'000;

struct fixture {
  test::log_under_test log;
  std::string schema = "rm_" + log.name();
  std::string conninfo = pg_server::shared().conninfo();
  pqxx::connection conn{conninfo};

  projector_options options() const {
    projector_options o;
    o.schema = schema;
    o.max_batch = 7; // many small transactions: batch boundaries fall everywhere
    return o;
  }
  void project() {
    projector p(*log, conninfo, options());
    p.catch_up();
  }
  pqxx::result query(const std::string& sql) {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    auto r = tx.exec(sql);
    tx.commit();
    return r;
  }
  // Every read-model table as one string, to see that nothing changed.
  std::string snapshot() {
    std::string out;
    for (const auto& t : read_model_tables())
      out += t + ":" +
             query("SELECT coalesce(string_agg(r, '|' ORDER BY r), '') FROM (SELECT "
                   "row_to_json(x)::text AS r FROM " +
                   t + " x) s")[0][0]
               .as<std::string>() +
             "\n";
    return out;
  }
};

// sb-a: 4 GiB, runs 2h10m, paused 1h (a rejected exec meanwhile), runs 30m, deleted.
// sb-b: 1 GiB, runs 45m, fails. sb-c (another tenant): 2 GiB, runs 10m, memory-paused.
std::vector<events::event> lifecycle() {
  sandbox_events a("sb-a", "acme", t0_ns);
  a.after(30min).created(4096, {{"team", "ml"}, {"env", "dev"}});
  a.after(1min).started().sampled(1 * gib).after(10min).exec("python train.py");
  a.after(2h).pause(events::pause_mode::filesystem, 2 * gib);
  a.after(1h).rejected(events::command_kind::exec, events::errc::conflict,
                       "sandbox sb-a is paused; resume it before exec");
  a.resume().after(30min).remove();
  sandbox_events b("sb-b", "acme", t0_ns);
  b.created(1024).started().after(45min).fail("runsc exited 137");
  sandbox_events c("sb-c", "globex", t0_ns);
  c.created(2048).started().after(10min).pause(events::pause_mode::memory, 0);
  std::vector<events::event> all;
  for (auto* s : {&a, &b, &c})
    all.insert(all.end(), s->events().begin(), s->events().end());
  return all;
}

std::int64_t as_i64(const pqxx::field& f) {
  return f.as<std::int64_t>();
}

} // namespace

BOOST_AUTO_TEST_SUITE(postgres, *boost::unit_test::precondition(sandboxd::test::postgres_installed))

BOOST_FIXTURE_TEST_CASE(lifecycle_stream_produces_expected_rows, fixture) {
  test::append_all(*log, lifecycle());
  project();

  auto a = query("SELECT tenant, state, template, limits->>'memory_mib', labels->>'team',"
                 " labels->>'env', pause_mode, writable_layer_bytes, last_seq,"
                 " extract(epoch FROM created_at)::bigint FROM sandboxes WHERE id = 'sb-a'");
  BOOST_REQUIRE(a.size() == 1u);
  BOOST_TEST(a[0][0].as<std::string>() == "acme");
  BOOST_TEST(a[0][1].as<std::string>() == "deleted");
  BOOST_TEST(a[0][2].as<std::string>() == "python-3.12");
  BOOST_TEST(a[0][3].as<std::string>() == "4096");
  BOOST_TEST(a[0][4].as<std::string>() == "ml");
  BOOST_TEST(a[0][5].as<std::string>() == "dev");
  BOOST_TEST(a[0][6].as<std::string>() == "");
  BOOST_TEST(as_i64(a[0][7]) == 2 * gib);
  BOOST_TEST(as_i64(a[0][8]) == 11);
  BOOST_TEST(as_i64(a[0][9]) == (t0_ms + 30 * minute_ms) / 1000);
  auto states = query("SELECT id, state, pause_mode FROM sandboxes ORDER BY id");
  BOOST_REQUIRE(states.size() == 3u);
  BOOST_TEST(states[1][1].as<std::string>() == "failed");
  BOOST_TEST(states[2][1].as<std::string>() == "paused");
  BOOST_TEST(states[2][2].as<std::string>() == "memory");
  // `deleted` follows state (migration 0004): acme's live sandboxes are sb-b (failed) alone.
  auto live = query("SELECT id FROM sandboxes WHERE tenant = 'acme' AND NOT deleted");
  BOOST_REQUIRE(live.size() == 1u);
  BOOST_TEST(live[0][0].as<std::string>() == "sb-b");

  // Billing: sb-a computes 4 GiB × (2h10m + 30m); stores, each interval at its larger
  // reading, created (0) .. sampled (1 GiB): 1 GiB × 1m, sampled .. paused (2 GiB): 2 GiB ×
  // 2h10m, paused .. deleted (not measured, 0): 2 GiB × 1h30m.
  auto meters = query("SELECT sandbox_id, sum(compute_byte_ms), sum(storage_byte_ms), count(*)"
                      " FROM billing_hourly GROUP BY sandbox_id ORDER BY sandbox_id");
  BOOST_REQUIRE(meters.size() == 3u);
  BOOST_TEST(as_i64(meters[0][1]) == 4 * gib * 160 * minute_ms);
  BOOST_TEST(as_i64(meters[0][2]) ==
             1 * gib * 1 * minute_ms + 2 * gib * 130 * minute_ms + 2 * gib * 90 * minute_ms);
  BOOST_TEST(as_i64(meters[0][3]) == 5); // hours t0 … t0+4h are touched
  BOOST_TEST(as_i64(meters[1][1]) == 1 * gib * 45 * minute_ms);
  BOOST_TEST(as_i64(meters[2][1]) == 2 * gib * 10 * minute_ms);
  BOOST_TEST(as_i64(meters[2][2]) == 0); // a 0-byte layer costs nothing
  auto intervals = query("SELECT meter, start_seq, end_seq FROM billing_intervals"
                         " WHERE sandbox_id = 'sb-a' ORDER BY meter, start_seq");
  BOOST_REQUIRE(intervals.size() == 5u);
  // compute: started(2) → pause_requested(5), resumed(9) → delete_requested(10)
  BOOST_TEST(as_i64(intervals[0][1]) == 2);
  BOOST_TEST(as_i64(intervals[0][2]) == 5);
  BOOST_TEST(as_i64(intervals[1][1]) == 9);
  BOOST_TEST(as_i64(intervals[1][2]) == 10);
  // storage: created(1) → sampled(3) → paused(6) → deleted(11)
  BOOST_TEST(as_i64(intervals[2][1]) == 1);
  BOOST_TEST(as_i64(intervals[2][2]) == 3);
  BOOST_TEST(as_i64(intervals[3][1]) == 3);
  BOOST_TEST(as_i64(intervals[4][1]) == 6);
  BOOST_TEST(as_i64(intervals[4][2]) == 11);

  pqxx::work tx(conn);
  tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
  auto r = billing_report(tx, "acme", t0_ms, t0_ms + 24 * ms_per_hour);
  BOOST_REQUIRE(r.value.has_value());
  BOOST_REQUIRE(r.value->lines.size() == 2u);
  const auto& line = r.value->lines[0];
  BOOST_TEST(line.sandbox_id == "sb-a");
  BOOST_TEST(line.compute_micro_usd == 160'000); // 4 GiB × 8/3 h × 15,000 µ$
  BOOST_TEST(line.storage_micro_usd == 201);     // 441/60 GiB-h × 20,000/730 µ$ = 201.37
  BOOST_TEST(
    (line.event_ids == std::vector<std::string>{"sb-a:1", "sb-a:2", "sb-a:3", "sb-a:5", "sb-a:6",
                                                "sb-a:9", "sb-a:10", "sb-a:11"}));
  BOOST_TEST(r.value->total_micro_usd == 160'000 + 201 + r.value->lines[1].compute_micro_usd +
                                           r.value->lines[1].storage_micro_usd);
  BOOST_TEST(r.value->lines[1].compute_micro_usd == 11'250); // 1 GiB × 0.75 h
  BOOST_TEST(billing_report(tx, "acme", t0_ms + 1, t0_ms + ms_per_hour).failure.has_value());
  tx.commit();

  // Audit: one row per event, the rejection with its code and message.
  BOOST_TEST(as_i64(query("SELECT count(*) FROM audit_log")[0][0]) == 11 + 3 + 4);
  auto rej = query("SELECT action, outcome, detail, principal FROM audit_log"
                   " WHERE event_id = 'sb-a:7'");
  BOOST_REQUIRE(rej.size() == 1u);
  BOOST_TEST(rej[0][0].as<std::string>() == "exec");
  BOOST_TEST(rej[0][1].as<std::string>() == "conflict");
  BOOST_TEST(rej[0][2].as<std::string>() == "sandbox sb-a is paused; resume it before exec");
  pqxx::work v(conn);
  v.exec("SET LOCAL search_path TO " + v.quote_name(schema));
  BOOST_TEST(verify_audit_log(v).empty());
}

BOOST_FIXTURE_TEST_CASE(events_delivered_twice_change_nothing, fixture) {
  auto evs = test::mixed_stream(12, 3, t0_ns);
  test::append_all(*log, evs);
  project();
  std::string before = snapshot();
  BOOST_TEST(as_i64(query("SELECT count(*) FROM audit_log")[0][0]) ==
             static_cast<std::int64_t>(evs.size()));

  // The whole stream again, and one event twice within one append.
  test::append_all(*log, evs);
  test::append_all(*log, {evs[5], evs[5]});
  projector p(*log, conninfo, options());
  p.catch_up();
  BOOST_TEST(p.status().applied == 0u);
  BOOST_TEST(p.status().duplicates == evs.size() + 2);
  BOOST_TEST(snapshot() == before);
  for (const auto& l : p.lag())
    BOOST_TEST(l.lag() == 0);
}

// A sandbox whose history does not start with `created` (sequence 1 is another event) has no
// `sandboxes` row to carry its duplicate guard: projection_sandbox_seq keeps it, and its
// events delivered again still change nothing.
BOOST_FIXTURE_TEST_CASE(events_of_a_sandbox_without_a_row_delivered_twice_change_nothing, fixture) {
  sandbox_events orphan("sb-orphan", "acme", t0_ns);
  orphan.rejected(events::command_kind::exec, events::errc::conflict, "not created yet")
    .started()
    .exec("echo 1")
    .sampled(gib);
  const auto& tail = orphan.events();
  test::append_all(*log, tail);
  project();
  BOOST_TEST(as_i64(query("SELECT count(*) FROM sandboxes")[0][0]) == 0);
  BOOST_TEST(as_i64(query("SELECT count(*) FROM audit_log")[0][0]) ==
             static_cast<std::int64_t>(tail.size()));
  BOOST_TEST(as_i64(query("SELECT last_seq FROM projection_sandbox_seq"
                          " WHERE sandbox_id = 'sb-orphan'")[0][0]) == 4);
  std::string before = snapshot();

  test::append_all(*log, tail);
  projector p(*log, conninfo, options());
  p.catch_up();
  BOOST_TEST(p.status().applied == 0u);
  BOOST_TEST(p.status().duplicates == tail.size());
  BOOST_TEST(snapshot() == before);
}

// Sequences are dense per sandbox (the actors refuse a gap in recovery): an event more than
// one above the last applied means the log lost events. The projection stops with a fault that
// names the sandbox and the missing sequence, and keeps nothing of the batch that holds it,
// whether the last applied sequence comes from the projector's memory or from PostgreSQL.
BOOST_FIXTURE_TEST_CASE(a_sequence_gap_stops_the_projection_and_keeps_nothing_of_its_batch,
                        fixture) {
  sandbox_events ok("sb-ok", "acme", t0_ns);
  ok.created(512).started().after(10min).sampled(gib);
  sandbox_events gappy("sb-gappy", "acme", t0_ns);
  gappy.created(512).started().after(10min).sampled(gib).exec("echo 1").exec("echo 2");
  auto opts = options();
  opts.max_batch = 1000; // the whole tail in one batch
  test::append_all(*log, {ok.events()[0], ok.events()[1], gappy.events()[0], gappy.events()[1]});
  projector p(*log, conninfo, opts);
  p.catch_up();
  const std::string before = snapshot();
  const auto offsets_before =
    as_i64(query("SELECT sum(next_offset) FROM projection_offsets")[0][0]);
  BOOST_TEST_REQUIRE(offsets_before == 4);

  // sb-ok's sequence 3 and sb-gappy's 4 and 5, without its 3: one batch.
  test::append_all(*log, {ok.events()[2], gappy.events()[3], gappy.events()[4]});
  auto expect_gap = [&](projector& q) {
    try {
      q.catch_up();
      BOOST_ERROR("a batch with a sequence gap was applied");
    } catch (const sequence_gap& e) {
      BOOST_TEST(e.sandbox_id == "sb-gappy");
      BOOST_TEST(e.first_missing == 3u);
      BOOST_TEST(e.found == 4u);
      const std::string what = e.what();
      BOOST_TEST(what.find("sandbox sb-gappy is missing event sequence 3") != std::string::npos,
                 what);
    }
    BOOST_TEST(snapshot() == before); // sb-ok's sequence 3 was not applied either
    BOOST_TEST(as_i64(query("SELECT sum(next_offset) FROM projection_offsets")[0][0]) ==
               offsets_before);
  };
  expect_gap(p); // the last applied sequence from the projector's memory
  projector fresh(*log, conninfo, opts);
  expect_gap(fresh); // from PostgreSQL

  // Running in the background, the projector keeps failing on it and says why.
  fresh.start();
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (fresh.status().failures < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  fresh.stop();
  BOOST_TEST(fresh.status().failures >= 2u);
  BOOST_TEST(fresh.status().last_error.find("sb-gappy is missing event sequence 3") !=
               std::string::npos,
             fresh.status().last_error);
  BOOST_TEST(snapshot() == before);
}

// Each way of tampering with the stored audit log is reported as its own problem, at the row
// it concerns: a row edited in place, a row replaced together with its recomputed hash, a
// deleted row, a swapped pair, a truncated tail. Rows and head rewritten together get past the
// verifier; the rebuild from the log sees them.
BOOST_FIXTURE_TEST_CASE(audit_verify_names_each_tampering_in_sql_as_its_own_problem, fixture) {
  test::append_all(*log, test::mixed_stream(6, 1, t0_ns));
  project();
  // The longest chain, so that rows 2, 3, 4 and the last exist.
  auto chain = query("SELECT tenant, partition, max(position) FROM audit_log"
                     " GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1");
  std::string tenant = chain[0][0].as<std::string>();
  std::string part = chain[0][1].as<std::string>();
  std::int64_t last = as_i64(chain[0][2]);
  BOOST_REQUIRE(last > 5);
  std::string where = " WHERE tenant = '" + tenant + "' AND partition = " + part;

  auto findings_after = [&](const std::string& tamper) {
    pqxx::work tx(conn); // rolled back: every case starts from the intact log
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    BOOST_REQUIRE(verify_audit_log(tx).empty());
    tx.exec(tamper);
    return verify_audit_log(tx);
  };
  auto stored_row = [&](std::int64_t pos) {
    auto f = query("SELECT tenant, partition, position, event_id, occurred_at_ns, principal,"
                   " action, sandbox_id, outcome, detail, encode(prev_hash, 'hex'),"
                   " encode(hash, 'hex') FROM audit_log" +
                   where + " AND position = " + std::to_string(pos))[0];
    audit_row r;
    r.tenant = f[0].as<std::string>();
    r.partition = f[1].as<std::int32_t>();
    r.position = f[2].as<std::int64_t>();
    r.event_id = f[3].as<std::string>();
    r.occurred_at_ns = f[4].as<std::int64_t>();
    r.principal = f[5].as<std::string>();
    r.action = f[6].as<std::string>();
    r.sandbox_id = f[7].as<std::string>();
    r.outcome = f[8].as<std::string>();
    r.detail = f[9].as<std::string>();
    r.prev_hash = f[10].as<std::string>();
    r.hash = f[11].as<std::string>();
    return r;
  };
  auto event_at = [&](std::int64_t pos) { return stored_row(pos).event_id; };
  // "problem@position" for each finding.
  auto problems = [](const std::vector<audit_finding>& findings) {
    std::vector<std::string> out;
    for (const auto& f : findings)
      out.push_back(std::string(to_string(f.problem)) + "@" + std::to_string(f.position));
    return out;
  };
  using names = std::vector<std::string>;

  auto edited =
    findings_after("UPDATE audit_log SET detail = 'nothing to see'" + where + " AND position = 3");
  BOOST_TEST_REQUIRE(problems(edited) == names{"hash_mismatch@3"});
  BOOST_TEST(edited[0].event_id == event_at(3));
  BOOST_TEST(edited[0].message.find(event_at(3)) != std::string::npos, edited[0].message);

  // Row 3 replaced by a row that hashes right on its own: its hash recomputed over the new
  // contents and its prev_hash. Row 4 was chained to the old row 3.
  auto forged = stored_row(3);
  forged.outcome = "accepted";
  forged.detail = "nothing happened";
  link(forged, forged.prev_hash);
  BOOST_REQUIRE(chain_hash(forged.prev_hash, forged) == forged.hash);
  auto replaced = findings_after("UPDATE audit_log SET outcome = 'accepted',"
                                 " detail = 'nothing happened', hash = decode('" +
                                 forged.hash + "', 'hex')" + where + " AND position = 3");
  BOOST_TEST_REQUIRE(problems(replaced) == names{"broken_link@3"});
  BOOST_TEST(replaced[0].event_id == event_at(3));

  auto deleted = findings_after("DELETE FROM audit_log" + where + " AND position = 4");
  BOOST_TEST_REQUIRE(problems(deleted) == names{"missing_row@4"});
  BOOST_TEST(deleted[0].event_id == "");

  auto swapped = findings_after("UPDATE audit_log SET position = -1" + where +
                                " AND position = 2; UPDATE audit_log SET position = 2" + where +
                                " AND position = 3; UPDATE audit_log SET position = 3" + where +
                                " AND position = -1");
  BOOST_TEST_REQUIRE(problems(swapped) == names({"out_of_order@2", "out_of_order@3"}));
  BOOST_TEST(swapped[0].event_id == event_at(3)); // the row now at 2 is the old row 3
  BOOST_TEST(swapped[1].event_id == event_at(2));

  auto truncated = findings_after("DELETE FROM audit_log" + where +
                                  " AND position >= " + std::to_string(last - 1));
  BOOST_TEST_REQUIRE(problems(truncated) == names{"truncated_tail@" + std::to_string(last - 1)});

  // The tail deleted and the head moved back to match: the stored log is consistent again,
  // and only the log itself, through a rebuild, shows what is gone.
  auto before_last = stored_row(last - 1);
  query("DELETE FROM audit_log" + where + " AND position = " + std::to_string(last) +
        "; UPDATE audit_chain_heads SET position = " + std::to_string(last - 1) +
        ", hash = decode('" + before_last.hash + "', 'hex')" + where);
  {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    BOOST_TEST(verify_audit_log(tx).empty());
  }
  auto report = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
  std::multiset<std::string> seen;
  for (const auto& d : report.differences)
    seen.insert(d.table + "/" + d.side);
  BOOST_TEST((seen == std::multiset<std::string>{"audit_log/rebuild", "audit_chain_heads/live",
                                                 "audit_chain_heads/rebuild"}));
}

BOOST_FIXTURE_TEST_CASE(rebuild_from_offset_zero_matches_live_and_reports_differences, fixture) {
  test::append_all(*log, test::mixed_stream(20, 4, t0_ns));
  project();
  auto report = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
  BOOST_TEST(report.differences.empty());
  BOOST_TEST(report.rows_compared > 100u);

  query("UPDATE billing_hourly SET compute_byte_ms = compute_byte_ms + 1"
        " WHERE (sandbox_id, hour_ms) IN (SELECT sandbox_id, min(hour_ms) FROM billing_hourly"
        " WHERE sandbox_id = 'sb-4' GROUP BY 1)");
  query("DELETE FROM sandboxes WHERE id = 'sb-7'");
  auto after = compare_schemas(conninfo, schema, schema + "_rebuild");
  BOOST_REQUIRE(after.differences.size() == 3u);
  std::multiset<std::string> seen;
  for (const auto& d : after.differences)
    seen.insert(d.table + "/" + d.side);
  BOOST_TEST((seen == std::multiset<std::string>{"billing_hourly/live", "billing_hourly/rebuild",
                                                 "sandboxes/rebuild"}));
}

// A redaction empties the labels and every private detail of the redacted sandbox's rows,
// those of its own batch too, and leaves every other sandbox's alone; the chain verifies, a
// rebuild from offset zero matches, and a redaction faked in SQL is found.
BOOST_FIXTURE_TEST_CASE(a_redaction_removes_private_details_and_the_chain_still_verifies, fixture) {
  sandbox_events a("sb-r", "acme", t0_ns);
  a.created(1024, {{"customer", "jane@example.com"}}).started().exec("cat /home/jane/notes");
  events::file_op_requested w;
  w.op_id = "op-1";
  w.path = "/workspace/jane-tax-2026.pdf";
  w.bytes = 10;
  a.add(w);
  events::file_op_finished done;
  done.op_id = "op-1";
  done.bytes = 10;
  a.add(done, "system");
  a.rejected(events::command_kind::read_file, events::errc::invalid_argument,
             "path /workspace/../jane is not absolute");
  a.after(1h).remove();
  sandbox_events b("sb-keep", "acme", t0_ns);
  b.created(1024, {{"customer", "joe"}}).started().exec("cat /home/joe/notes");
  test::append_all(*log, a.events());
  test::append_all(*log, b.events());
  project(); // sb-r's rows are in before its redaction
  a.add(events::redacted{"privacy request 42"});
  test::append_all(*log, {a.events().back()});
  project();

  BOOST_TEST(
    query("SELECT labels::text FROM sandboxes WHERE id = 'sb-r'")[0][0].as<std::string>() == "{}");
  BOOST_TEST(query("SELECT labels->>'customer' FROM sandboxes WHERE id = 'sb-keep'")[0][0]
               .as<std::string>() == "joe");
  auto rows = query("SELECT action, detail, redacted, octet_length(detail_sha256), hash_version"
                    " FROM audit_log WHERE sandbox_id = 'sb-r' ORDER BY position");
  std::string all_details;
  int redacted = 0;
  for (const auto& r : rows) {
    all_details += r[1].as<std::string>() + "\n";
    BOOST_TEST(r[4].as<int>() == 2);
    if (r[2].as<bool>()) {
      ++redacted;
      BOOST_TEST(r[1].as<std::string>().empty());
      BOOST_TEST(r[3].as<int>() == 32);
    }
  }
  BOOST_TEST(redacted == 4); // exec_started, file_op_requested, file_op_finished, read_file
  BOOST_TEST(all_details.find("jane") == std::string::npos, all_details);
  BOOST_TEST(all_details.find("privacy request 42") != std::string::npos);
  BOOST_TEST(query("SELECT count(*) FROM audit_log WHERE sandbox_id = 'sb-keep' AND redacted")[0][0]
               .as<int>() == 0);
  BOOST_TEST(query("SELECT detail FROM audit_log WHERE sandbox_id = 'sb-keep'"
                   " AND action = 'exec_started'")[0][0]
               .as<std::string>()
               .find("/home/joe/notes") != std::string::npos);
  {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    BOOST_TEST(verify_audit_log(tx).empty());
  }
  auto report = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
  BOOST_TEST(report.differences.empty());

  // Hiding another sandbox's detail as if redacted: its digest keeps the hash right, but no
  // redaction of sb-keep explains it.
  query("UPDATE audit_log SET detail_sha256 = sha256(convert_to(detail, 'UTF8')), detail = '',"
        " redacted = true WHERE sandbox_id = 'sb-keep' AND action = 'exec_started'");
  pqxx::work tx(conn);
  tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
  auto findings = verify_audit_log(tx);
  BOOST_TEST_REQUIRE(findings.size() == 1u);
  BOOST_TEST(to_string(findings[0].problem) == "bad_redaction");
  BOOST_TEST(findings[0].message.find("sb-keep") != std::string::npos, findings[0].message);
}

// The log may hold bytes PostgreSQL refuses (written before the API refused them, or by any
// writer of the topic): labels, command lines and paths with malformed UTF-8 or NUL. They are
// stored as text (each bad byte U+FFFD) and the projection goes on; verify and rebuild agree.
BOOST_FIXTURE_TEST_CASE(bytes_that_are_not_text_never_stop_the_projection, fixture) {
  using namespace std::string_literals;
  sandbox_events a("sb-bytes", "acme", t0_ns);
  a.created(1024, {{"k\xFF"s, "v\0w"s}}, "tmpl\xC0\xAF").started().exec("echo \xFF\xFE");
  events::file_op_requested w;
  w.op_id = "op-1";
  w.path = "/workspace/\xFF\0.bin"s;
  a.add(w);
  sandbox_events b("sb-after", "acme", t0_ns);
  b.created(512).started();
  test::append_all(*log, a.events());
  test::append_all(*log, b.events());
  project();
  BOOST_TEST(query("SELECT count(*) FROM sandboxes")[0][0].as<int>() == 2); // went past them
  const std::string fffd = "\xEF\xBF\xBD";
  auto row = query("SELECT template, labels::text FROM sandboxes WHERE id = 'sb-bytes'");
  BOOST_TEST(row[0][0].as<std::string>() == "tmpl" + fffd + fffd);
  BOOST_TEST(row[0][1].as<std::string>() == "{\"k" + fffd + "\": \"v" + fffd + "w\"}");
  auto details = query("SELECT detail FROM audit_log WHERE sandbox_id = 'sb-bytes'"
                       " AND action IN ('exec_started', 'file_op_requested') ORDER BY position");
  BOOST_REQUIRE(details.size() == 2u);
  BOOST_TEST(details[0][0].as<std::string>().find("echo " + fffd + fffd) != std::string::npos);
  BOOST_TEST(details[1][0].as<std::string>().find("/workspace/" + fffd + fffd + ".bin") !=
             std::string::npos);
  {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    BOOST_TEST(verify_audit_log(tx).empty());
  }
  BOOST_TEST(rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild").differences.empty());
}

// rebuild_and_compare reads the live offsets and rows in the snapshot it compares in, so a
// projector committing all the while is never a difference; a row changed in SQL still is.
BOOST_FIXTURE_TEST_CASE(rebuild_compares_in_one_snapshot_while_a_projector_applies, fixture) {
  const auto stream = test::mixed_stream(2000, 5, t0_ns); // more than the test needs
  apply_migrations(conn, schema);
  projector live(*log, conninfo, options()); // small batches: a commit every few ms
  live.start();
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> appended{0};
  std::thread producer([&] {
    for (std::size_t i = 0; i < stream.size() && !stop; i += 10) {
      std::vector<events::event> part(
        stream.begin() + static_cast<std::ptrdiff_t>(i),
        stream.begin() + static_cast<std::ptrdiff_t>(std::min(stream.size(), i + 10)));
      test::append_all(*log, part);
      appended += part.size();
      std::this_thread::sleep_for(5ms);
    }
  });
  auto live_offsets = [&] {
    return as_i64(query("SELECT coalesce(sum(next_offset), 0) FROM projection_offsets")[0][0]);
  };
  auto compared_at = [](const rebuild_report& r) {
    std::int64_t sum = 0;
    for (auto [p, o] : r.offsets)
      sum += o;
    return sum;
  };
  // Compares until `rounds` of them ran while the live projection moved on, each expecting
  // `expected` differences.
  auto compare_while_applying = [&](int rounds, const std::multiset<std::string>& expected) {
    int overtaken = 0;
    int compares = 0;
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (overtaken < rounds && std::chrono::steady_clock::now() < deadline) {
      auto r = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
      auto after = live_offsets();
      ++compares;
      if (after > compared_at(r))
        ++overtaken; // the live projection committed while this comparison ran
      std::multiset<std::string> seen;
      for (const auto& d : r.differences) {
        seen.insert(d.table + "/" + d.side);
        BOOST_TEST_MESSAGE(d.table << " only in " << d.side << ": " << d.row);
      }
      BOOST_TEST((seen == expected), "comparison " << compares << " at " << compared_at(r)
                                                   << " records, live at " << after);
    }
    BOOST_TEST_MESSAGE(compares << " comparisons, " << overtaken << " overtaken by the projector");
    BOOST_TEST_REQUIRE(overtaken == rounds);
  };
  compare_while_applying(3, {});

  // A real difference, in a row the projector never writes again (audit rows are appended).
  query("UPDATE audit_log SET detail = 'nothing to see' WHERE (tenant, partition, position) ="
        " (SELECT tenant, partition, 1 FROM audit_log ORDER BY tenant, partition LIMIT 1)");
  compare_while_applying(2, {"audit_log/live", "audit_log/rebuild"});
  BOOST_TEST(appended < stream.size()); // the stream was still coming

  stop = true;
  producer.join();
  live.stop();
}

// rebuild_and_replace while a projector applies a stream still being appended: rows edited
// in SQL (one the projector never writes again) are restored, the live projection goes on
// from where it stood, and at the end the live read models equal a rebuild from offset zero.
BOOST_FIXTURE_TEST_CASE(rebuild_and_replace_restores_edited_rows_while_a_projector_applies,
                        fixture) {
  const auto stream = test::mixed_stream(600, 5, t0_ns);
  const auto half = static_cast<std::ptrdiff_t>(stream.size() / 2);
  test::append_all(*log, {stream.begin(), stream.begin() + half});
  apply_migrations(conn, schema);
  projector live(*log, conninfo, options());
  live.catch_up();
  query("UPDATE audit_log SET detail = 'nothing to see' WHERE (tenant, partition, position) ="
        " (SELECT tenant, partition, 1 FROM audit_log ORDER BY tenant, partition LIMIT 1)");
  query("UPDATE sandboxes SET labels = '{\"edited\": \"yes\"}' WHERE id = 'sb-3'");
  BOOST_TEST(rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild").differences.size() ==
             4u);

  live.start();
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    for (auto i = half; i < static_cast<std::ptrdiff_t>(stream.size()) && !stop; i += 10) {
      test::append_all(*log, {stream.begin() + i,
                              stream.begin() + std::min<std::ptrdiff_t>(stream.size(), i + 10)});
      std::this_thread::sleep_for(2ms);
    }
  });
  const auto replaced = rebuild_and_replace(*log, conninfo, schema, schema + "_scratch");
  BOOST_TEST(replaced.rows_replaced > 100u);
  BOOST_TEST(as_i64(query("SELECT count(*) FROM information_schema.schemata WHERE schema_name = '" +
                          schema + "_scratch'")[0][0]) == 0); // dropped with the switch
  producer.join();
  live.stop();
  live.catch_up();
  auto after = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
  for (const auto& d : after.differences)
    BOOST_TEST_MESSAGE(d.table << " only in " << d.side << ": " << d.row);
  BOOST_TEST(after.differences.empty());
  std::int64_t total = 0;
  for (auto [p, o] : after.offsets)
    total += o;
  BOOST_TEST(total == static_cast<std::int64_t>(stream.size()));
}

// A payload of a newer version (`unknown`) changes no sandbox state and no meter, keeps its
// place in its sandbox's sequence (the event after it is no gap, a second delivery is a
// duplicate) and is recorded in the audit chain by its envelope; the same whatever the batch
// boundaries, and the same in a rebuild.
BOOST_FIXTURE_TEST_CASE(a_payload_of_a_newer_version_is_skipped_alike_by_every_read_model,
                        fixture) {
  sandbox_events a("sb-a", "acme", t0_ns);
  a.created(1024).started().after(20min).add(events::unknown{40}, "system");
  a.after(10min).add(events::unknown{41});
  sandbox_events b("sb-b", "acme", t0_ns); // its history starts with a newer kind
  b.add(events::unknown{42}).started();
  test::append_all(*log, a.events());
  test::append_all(*log, b.events());
  project();
  auto row =
    query("SELECT state, last_seq, updated_at = to_timestamp(" +
          std::to_string((t0_ms + 30 * minute_ms) / 1000) + ") FROM sandboxes WHERE id = 'sb-a'");
  BOOST_TEST_REQUIRE(row.size() == 1u);
  BOOST_TEST(row[0][0].as<std::string>() == "running"); // as `started` left it
  BOOST_TEST(as_i64(row[0][1]) == 4);
  BOOST_TEST(row[0][2].as<bool>()); // every event moves updated_at
  BOOST_TEST(as_i64(query("SELECT count(*) FROM sandboxes WHERE id = 'sb-b'")[0][0]) == 0);
  BOOST_TEST(as_i64(query("SELECT last_seq FROM projection_sandbox_seq"
                          " WHERE sandbox_id = 'sb-b'")[0][0]) == 2);
  auto meter = query("SELECT compute_open_seq, compute_open_ms FROM billing_meter_state"
                     " WHERE sandbox_id = 'sb-a'");
  BOOST_TEST(as_i64(meter[0][0]) == 2); // still the interval `started` opened
  BOOST_TEST(as_i64(meter[0][1]) == t0_ms);

  // The rest of sb-a: its sequence goes on after the unknown ones; the compute interval
  // closes at pause_requested, 1 h after `started`.
  a.after(30min).pause(events::pause_mode::filesystem, 2 * gib);
  a.after(1h).add(events::unknown{40}, "system").after(1h).remove();
  test::append_all(*log, {a.events().begin() + 4, a.events().end()});
  test::append_all(*log, {a.events()[2]}); // an unknown one delivered again
  projector p(*log, conninfo, options());
  p.catch_up();
  BOOST_TEST(p.status().applied == a.events().size() - 4);
  BOOST_TEST(p.status().duplicates == 1u);
  BOOST_TEST(query("SELECT state FROM sandboxes WHERE id = 'sb-a'")[0][0].as<std::string>() ==
             "deleted");
  auto usage = query("SELECT sum(compute_byte_ms), sum(storage_byte_ms) FROM billing_hourly"
                     " WHERE sandbox_id = 'sb-a'");
  BOOST_TEST(as_i64(usage[0][0]) == 1 * gib * ms_per_hour); // 1 GiB × 1 h
  // created (0) → paused (2 GiB) 1 h and paused → deleted (not measured) 2 h, at 2 GiB each
  BOOST_TEST(as_i64(usage[0][1]) == 2 * gib * 3 * ms_per_hour);

  auto audit = query("SELECT event_id, action, outcome, detail, principal FROM audit_log"
                     " WHERE action = 'unknown' ORDER BY event_id");
  BOOST_TEST_REQUIRE(audit.size() == 4u);
  BOOST_TEST(audit[0][0].as<std::string>() == "sb-a:3");
  BOOST_TEST(audit[0][2].as<std::string>() == "unknown");
  BOOST_TEST(audit[0][3].as<std::string>() == "payload ordinal 40");
  BOOST_TEST(audit[0][4].as<std::string>() == "system");
  BOOST_TEST(audit[3][0].as<std::string>() == "sb-b:1");
  BOOST_TEST(audit[3][3].as<std::string>() == "payload ordinal 42");
  {
    pqxx::work tx(conn);
    tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
    BOOST_TEST(verify_audit_log(tx).empty());
  }

  // One event per batch into another schema, and a rebuild: the same rows.
  auto one_by_one = options();
  one_by_one.schema = schema + "_one";
  one_by_one.max_batch = 1;
  projector q(*log, conninfo, one_by_one);
  q.catch_up();
  BOOST_TEST(compare_schemas(conninfo, schema, one_by_one.schema).differences.empty());
  BOOST_TEST(rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild").differences.empty());
}

BOOST_FIXTURE_TEST_CASE(projector_reports_lag_per_partition, fixture) {
  auto evs = test::mixed_stream(8, 2, t0_ns);
  test::append_all(*log, evs);
  projector p(*log, conninfo, options());
  std::int64_t total = 0;
  for (const auto& l : p.lag())
    total += l.lag();
  BOOST_TEST(total == static_cast<std::int64_t>(evs.size()));
  p.step();
  std::int64_t after_one = 0;
  for (const auto& l : p.lag())
    after_one += l.lag();
  BOOST_TEST(after_one < total);
  BOOST_TEST(after_one > 0);
  p.catch_up();
  for (const auto& l : p.lag())
    BOOST_TEST(l.lag() == 0);
}

BOOST_FIXTURE_TEST_CASE(two_projectors_of_one_projection_apply_each_event_once, fixture) {
  auto evs = test::mixed_stream(30, 3, t0_ns);
  test::append_all(*log, evs);
  apply_migrations(conn, schema); // the offsets table exists before either projector runs
  projector a(*log, conninfo, options());
  projector b(*log, conninfo, options());
  a.start();
  b.start();
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = query("SELECT coalesce(sum(next_offset), 0) FROM projection_offsets");
    if (as_i64(done[0][0]) == static_cast<std::int64_t>(evs.size()))
      break;
    std::this_thread::sleep_for(20ms);
  }
  a.stop();
  b.stop();
  // The offset rows are locked for the whole step, so the second projector waits and then
  // reads the first one's offsets: the duplicate guard never has to step in.
  BOOST_TEST(a.status().applied + b.status().applied == evs.size());
  BOOST_TEST(a.status().duplicates + b.status().duplicates == 0u);
  BOOST_TEST(as_i64(query("SELECT count(*) FROM audit_log")[0][0]) ==
             static_cast<std::int64_t>(evs.size()));
  auto report = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
  BOOST_TEST(report.differences.empty());
}

// Each projector remembers the guard, meter state and chain heads it wrote (read_model.hpp)
// and trusts that memory only while the offsets it locks are the ones it committed. Two
// projectors of one projection taking turns never lock their own offsets again, so each step
// must read back what the other one wrote; a projector that trusted its stale memory would
// reopen closed meters and fork the audit chains.
BOOST_FIXTURE_TEST_CASE(projectors_taking_turns_read_back_what_the_other_wrote, fixture) {
  auto evs = test::mixed_stream(30, 3, t0_ns);
  test::append_all(*log, evs);
  projector a(*log, conninfo, options());
  projector b(*log, conninfo, options());
  std::size_t consumed = 0;
  for (int turn = 0; consumed < evs.size(); ++turn) {
    // Two steps in a row now and then: the memory is trusted there.
    auto& p = (turn / 2) % 2 == 0 ? a : b;
    consumed += p.step();
  }
  BOOST_TEST(a.status().applied + b.status().applied == evs.size());
  BOOST_TEST(a.status().duplicates + b.status().duplicates == 0u);
  auto report = rebuild_and_compare(*log, conninfo, schema, schema + "_rebuild");
  for (const auto& d : report.differences)
    BOOST_TEST_MESSAGE(d.table << " only in " << d.side << ": " << d.row);
  BOOST_TEST(report.differences.empty());
  pqxx::work tx(conn);
  tx.exec("SET LOCAL search_path TO " + tx.quote_name(schema));
  BOOST_TEST(verify_audit_log(tx).empty());
}

BOOST_AUTO_TEST_SUITE_END()
