// sandboxctl's pure parts: durations, times, KEY=VALUE pairs, signals, modes, CPUs and log
// positions as typed on the command line; exit codes; the views of sandboxes, files,
// events, bills and audit checks (text and JSON); tenants' strings escaped for the terminal;
// where the connection settings come from.
#define BOOST_TEST_MODULE cli_units
#include <boost/test/unit_test.hpp>

#include "cli/audit_view.hpp"
#include "cli/bill_view.hpp"
#include "cli/connection.hpp"
#include "cli/duration_arg.hpp"
#include "cli/event_view.hpp"
#include "cli/exec_view.hpp"
#include "cli/exit_codes.hpp"
#include "cli/file_view.hpp"
#include "cli/first_use_build.hpp"
#include "cli/progress.hpp"
#include "cli/sandbox_view.hpp"
#include "cli/table.hpp"
#include "cli/terminal_text.hpp"
#include "cli/time_arg.hpp"
#include "cli/value_args.hpp"

#include <algorithm>
#include <map>

using namespace sandboxd;
using namespace sandboxd::cli;
using namespace std::chrono_literals;
using ns = std::chrono::nanoseconds;

namespace {

time_point utc(const char* text) {
  auto t = parse_time(text, time_point{});
  BOOST_REQUIRE_MESSAGE(t.ok(), text << ": " << (t.ok() ? "" : t.err().message));
  return *t;
}

std::int64_t ns_of(const char* text) {
  return utc(text).time_since_epoch().count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(arguments)

BOOST_AUTO_TEST_CASE(durations_read_as_people_write_them) {
  BOOST_TEST(parse_duration("90s")->count() == ns(90s).count());
  BOOST_TEST(parse_duration("15m")->count() == ns(15min).count());
  BOOST_TEST(parse_duration("2h")->count() == ns(2h).count());
  BOOST_TEST(parse_duration("1h30m")->count() == ns(90min).count());
  BOOST_TEST(parse_duration("1d12h")->count() == ns(36h).count());
  BOOST_TEST(parse_duration("500ms")->count() == ns(500ms).count());
  BOOST_TEST(parse_duration("1m5s")->count() == ns(65s).count());
  BOOST_TEST(parse_duration("0")->count() == 0);
  for (const char* bad : {"", "90", "s", "1.5h", "-1h", "1x", "1h 30m", "99999999999999999999h"}) {
    auto d = parse_duration(bad);
    BOOST_TEST(!d.ok(), bad);
    if (!d.ok()) {
      BOOST_TEST(d.code() == errc::invalid_argument);
      BOOST_TEST(d.err().message.find("90s, 15m, 2h or 1h30m") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(durations_print_in_the_form_they_are_read) {
  BOOST_TEST(format_duration(90s) == "1m30s");
  BOOST_TEST(format_duration(90min) == "1h30m");
  BOOST_TEST(format_duration(0s) == "0s");
  BOOST_TEST(format_duration(500ms) == "500ms");
  BOOST_TEST(format_duration(ns(1'000'000'250)) == "1s250ns");
  for (auto d : {ns(1s), ns(36h), ns(61min), ns(1234567ms)})
    BOOST_TEST(parse_duration(format_duration(d))->count() == d.count());
}

BOOST_AUTO_TEST_CASE(times_read_rfc3339_dates_and_offsets_from_now) {
  BOOST_TEST(ns_of("1970-01-01T00:00:00Z") == 0);
  BOOST_TEST(ns_of("2026-12-01T13:59:27Z") == 1'796'133'567'000'000'000);
  BOOST_TEST(ns_of("2026-12-01t13:59:27z") == ns_of("2026-12-01T13:59:27Z"));
  BOOST_TEST(ns_of("2026-12-01 13:59:27Z") == ns_of("2026-12-01T13:59:27Z"));
  BOOST_TEST(ns_of("2026-12-01T14:59:27+01:00") == ns_of("2026-12-01T13:59:27Z"));
  BOOST_TEST(ns_of("2026-12-01T12:29:27-01:30") == ns_of("2026-12-01T13:59:27Z"));
  BOOST_TEST(ns_of("2026-12-01T13:59:27.5Z") == ns_of("2026-12-01T13:59:27Z") + 500'000'000);
  BOOST_TEST(ns_of("2026-12-01T13:59:27.123456789Z") ==
             ns_of("2026-12-01T13:59:27Z") + 123'456'789);
  BOOST_TEST(ns_of("2026-12-01") == ns_of("2026-12-01T00:00:00Z"));
  BOOST_TEST(ns_of("2024-02-29") == ns_of("2024-03-01") - 86'400'000'000'000);

  const time_point now = utc("2026-12-01T12:00:00Z");
  BOOST_TEST(parse_time("now", now)->time_since_epoch().count() == ns_of("2026-12-01T12:00:00Z"));
  BOOST_TEST(parse_time("-1h", now)->time_since_epoch().count() == ns_of("2026-12-01T11:00:00Z"));
  BOOST_TEST(parse_time("+30m", now)->time_since_epoch().count() == ns_of("2026-12-01T12:30:00Z"));
  BOOST_TEST(parse_time("-1h30m", now)->time_since_epoch().count() ==
             ns_of("2026-12-01T10:30:00Z"));

  for (const char* bad :
       {"yesterday", "2026-13-01", "2026-02-30", "2026-12-01T13:59:27", "2026-12-01T25:00:00Z",
        "2026-12-01T13:59Z", "-1", "+x", "2026-12-01T13:59:27Zjunk", "2026-12-01T13:59:27.Z"}) {
    auto t = parse_time(bad, now);
    BOOST_TEST(!t.ok(), bad);
    if (!t.ok())
      BOOST_TEST(t.err().message.find("RFC 3339") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(times_print_as_rfc3339_utc_and_round_trip) {
  const auto t = utc("2026-12-01T13:59:27.045Z");
  BOOST_TEST(format_time(t) == "2026-12-01T13:59:27.045Z");
  BOOST_TEST(format_time_seconds(t) == "2026-12-01T13:59:27Z");
  BOOST_TEST(format_time_millis(t) == "2026-12-01T13:59:27.045Z");
  BOOST_TEST(format_time_millis(utc("2026-12-01T13:59:27Z")) == "2026-12-01T13:59:27.000Z");
  BOOST_TEST(format_time(utc("2026-12-01T13:59:27Z")) == "2026-12-01T13:59:27Z");
  BOOST_TEST(format_time(utc("2026-12-01T13:59:27.000000001Z")) ==
             "2026-12-01T13:59:27.000000001Z");
  BOOST_TEST(format_time(utc("1969-12-31T23:59:59.5Z")) == "1969-12-31T23:59:59.5Z");
  for (const char* s :
       {"2000-01-01T00:00:00Z", "2026-06-30T23:59:59.999Z", "2099-12-31T12:00:00.1Z"})
    BOOST_TEST(format_time(utc(s)) == s);
  BOOST_TEST(format_time(floor_hour(t)) == "2026-12-01T13:00:00Z");
  BOOST_TEST(format_time(ceil_hour(t)) == "2026-12-01T14:00:00Z");
  BOOST_TEST(format_time(ceil_hour(utc("2026-12-01T14:00:00Z"))) == "2026-12-01T14:00:00Z");
}

BOOST_AUTO_TEST_CASE(pairs_signals_modes_cpus_and_offsets) {
  auto kv = parse_pair("team=search=x", "--label");
  BOOST_TEST(kv->first == "team");
  BOOST_TEST(kv->second == "search=x");
  BOOST_TEST(parse_pair("EMPTY=", "--env")->second == "");
  BOOST_TEST(!parse_pair("=v", "--label").ok());
  auto no_eq = parse_pair("team", "--label");
  BOOST_TEST(!no_eq.ok());
  BOOST_TEST(no_eq.err().message.find("--label 'team' is not KEY=VALUE") != std::string::npos);

  BOOST_TEST(*parse_signal("TERM") == 15);
  BOOST_TEST(*parse_signal("sigkill") == 9);
  BOOST_TEST(*parse_signal("SIGINT") == 2);
  BOOST_TEST(*parse_signal("10") == 10);
  BOOST_TEST(!parse_signal("0").ok());
  BOOST_TEST(!parse_signal("NOPE").ok());
  BOOST_TEST(signal_name(9) == "SIGKILL");
  BOOST_TEST(signal_name(40) == "signal 40");

  BOOST_TEST(*parse_mode("644") == 0644u);
  BOOST_TEST(*parse_mode("0755") == 0755u);
  BOOST_TEST(*parse_mode("0o4755") == 04755u);
  BOOST_TEST(!parse_mode("800").ok());
  BOOST_TEST(!parse_mode("17777").ok());
  BOOST_TEST(format_mode(0644) == "rw-r--r--");
  BOOST_TEST(format_mode(04755) == "rwsr-xr-x");
  BOOST_TEST(format_mode(01777) == "rwxrwxrwt");

  BOOST_TEST(*parse_cpus("2") == 2000u);
  BOOST_TEST(*parse_cpus("0.5") == 500u);
  BOOST_TEST(*parse_cpus(".25") == 250u);
  BOOST_TEST(*parse_cpus("1.125") == 1125u);
  for (const char* bad : {"0", "0.0001", "1.", "", "x", "-1"})
    BOOST_TEST(!parse_cpus(bad).ok(), bad);

  // --network and --allow: rules alone make an allow list; none with rules is refused.
  auto net = network_flags("", {"pypi.org", "10.0.0.0/8:5432"});
  BOOST_TEST((net->mode == sandboxd::events::network_mode::allow_list));
  BOOST_TEST(net->allowed_hosts.size() == 2u);
  BOOST_TEST((network_flags("", {})->mode == sandboxd::events::network_mode::none));
  BOOST_TEST((network_flags("all", {})->mode == sandboxd::events::network_mode::full));
  BOOST_TEST(!network_flags("none", {"pypi.org"}).ok());
  BOOST_TEST(!network_flags("everything", {}).ok());

  auto po = parse_partition_offset("3:1200");
  BOOST_TEST(po->first == 3);
  BOOST_TEST(po->second == 1200);
  for (const char* bad : {"3", "3:", ":1", "-1:0", "a:b"})
    BOOST_TEST(!parse_partition_offset(bad).ok(), bad);

  BOOST_TEST((*parse_pause_mode("memory") == events::pause_mode::memory));
  BOOST_TEST(!parse_pause_mode("disk").ok());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(exit_codes)

BOOST_AUTO_TEST_CASE(each_error_code_has_its_own_exit_code_outside_what_commands_use) {
  BOOST_TEST(exit_code_of(errc::not_found) == 201);
  BOOST_TEST(exit_code_of(errc::conflict) == 202);
  BOOST_TEST(exit_code_of(errc::permission_denied) == 203);
  BOOST_TEST(exit_code_of(errc::invalid_argument) == 204);
  BOOST_TEST(exit_code_of(errc::resource_exhausted) == 205);
  BOOST_TEST(exit_code_of(errc::unavailable) == 206);
  BOOST_TEST(exit_code_of(errc::internal) == 210);
  std::map<int, std::string> seen;
  for (const auto& r : exit_code_table()) {
    BOOST_TEST(seen.emplace(r.code, r.name).second, "exit code " << r.code << " twice");
    if (r.code >= 200) {
      // Shells and common tools: 0-2, 126, 127, 128-165 (signals), 255.
      BOOST_TEST(!(r.code <= 2 || r.code == 126 || r.code == 127 ||
                   (r.code >= 128 && r.code <= 165) || r.code == 255));
    }
  }
  BOOST_TEST(seen.size() == 13u);
}

BOOST_AUTO_TEST_CASE(an_exec_exits_with_its_code_or_128_plus_its_signal) {
  api::exec_result r;
  r.exit_code = 42;
  BOOST_TEST(exit_code_of(r) == 42);
  r.exit_code = 127;
  BOOST_TEST(exit_code_of(r) == 127);
  r.exit_code = -1;
  r.signal = 9;
  BOOST_TEST(exit_code_of(r) == 137);
  r.signal = 15;
  BOOST_TEST(exit_code_of(r) == 143);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(views)

BOOST_AUTO_TEST_CASE(tables_pad_columns_and_sizes_read_in_binary_units) {
  BOOST_TEST(render_table({"ID", "STATE"}, {{"sb-1", "running"}, {"sb-22222", "paused"}}) ==
             "ID        STATE\nsb-1      running\nsb-22222  paused\n");
  BOOST_TEST(render_table({"A", "B", "C"}, {{"x"}}) == "A  B  C\nx\n");
  BOOST_TEST(render_fields({{"id", "sb-1"}, {"end time", "none"}}) ==
             "id:        sb-1\nend time:  none\n");
  BOOST_TEST(human_bytes(0) == "0 B");
  BOOST_TEST(human_bytes(1023) == "1023 B");
  BOOST_TEST(human_bytes(1536) == "1.5 KiB");
  BOOST_TEST(human_bytes(20ull << 30) == "20.0 GiB");
}

BOOST_AUTO_TEST_CASE(a_sandbox_in_json_has_the_documented_fields) {
  api::sandbox_info s;
  s.id = "sb-1";
  s.state = "paused";
  s.template_name = "base";
  s.runtime = "crun";
  s.tenant = "dev";
  s.limits = {256, 500, 64, 0};
  s.labels = {{"team", "search"}};
  s.created_at_ns = ns_of("2026-12-01T12:00:00Z");
  s.end_time_ns = ns_of("2026-12-01T14:00:00Z");
  s.pause_mode = events::pause_mode::memory;
  s.idle_timeout_ns = ns(90s).count();
  s.on_timeout = "delete";
  const auto j = sandbox_json(s);
  for (const char* f : {"id", "state", "template", "runtime", "created_at", "end_time", "limits",
                        "labels", "pause_mode", "idle_timeout_seconds", "lifetime_seconds",
                        "writable_bytes", "failure", "sequence", "tenant", "on_timeout"})
    BOOST_TEST(j.contains(f), f);
  BOOST_TEST(j["created_at"] == "2026-12-01T12:00:00Z");
  BOOST_TEST(j["end_time"] == "2026-12-01T14:00:00Z");
  BOOST_TEST(j["pause_mode"] == "memory");
  BOOST_TEST(j["idle_timeout_seconds"] == 90);
  BOOST_TEST(j["labels"]["team"] == "search");
  BOOST_TEST(j["limits"]["cpu_millicores"] == 500);
  s.state = "running";
  s.end_time_ns = 0;
  BOOST_TEST(sandbox_json(s)["pause_mode"].is_null());
  BOOST_TEST(sandbox_json(s)["end_time"].is_null());

  const auto text = sandbox_text(s, utc("2026-12-01T12:30:00Z"));
  BOOST_TEST(text.find("cpus:              0.5\n") != std::string::npos, text);
  BOOST_TEST(text.find("idle timeout:      1m30s\n") != std::string::npos, text);
  BOOST_TEST(text.find("end time:          none\n") != std::string::npos, text);
  s.end_time_ns = ns_of("2026-12-01T14:00:00Z");
  BOOST_TEST(sandbox_text(s, utc("2026-12-01T12:30:00Z")).find("(in 1h30m)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_go_to_base64) {
  json doc;
  put_bytes(doc, "stdout", "hello\n");
  put_bytes(doc, "stderr", std::string("\x00\x01\x02\xff\x00\x41", 6));
  BOOST_TEST(doc["stdout"] == "hello\n");
  BOOST_TEST(!doc.contains("stderr"));
  BOOST_TEST(doc["stderr_base64"] == "AAEC/wBB");
  BOOST_TEST(base64("") == "");
  BOOST_TEST(base64("f") == "Zg==");
  BOOST_TEST(base64("fo") == "Zm8=");
  BOOST_TEST(base64("foo") == "Zm9v");
  BOOST_TEST(valid_utf8("h\xc3\xa9"));
  BOOST_TEST(!valid_utf8("\xc3"));
  BOOST_TEST(!valid_utf8("\xed\xa0\x80"));    // a surrogate
  BOOST_TEST(!valid_utf8("\xc0\xaf"));        // overlong
  BOOST_TEST(valid_utf8("\xf0\x9f\x98\x80")); // U+1F600
  BOOST_TEST(dump_line(json{{"x", "a\xff"}}) == "{\"x\":\"a\xef\xbf\xbd\"}\n");
  BOOST_TEST(hex(std::string("\x00\xab", 2)) == "00ab");
}

BOOST_AUTO_TEST_CASE(an_event_line_and_its_json_carry_the_same_essentials) {
  api::streamed_event s;
  s.partition = 3;
  s.offset = 41;
  s.event.event_id = "ev-1";
  s.event.sandbox_id = "sb-1";
  s.event.sequence = 4;
  s.event.tenant = "dev";
  s.event.principal = "system";
  s.event.occurred_at = utc("2026-12-01T12:00:00.25Z");
  s.event.body = events::paused{events::pause_mode::filesystem, 21474836480ull};
  BOOST_TEST(event_line(s) == "2026-12-01T12:00:00.250Z  sb-1  4  paused  system  "
                              "mode=filesystem writable_bytes=21474836480\n");
  const auto j = event_json(s);
  BOOST_TEST(j["kind"] == "paused");
  BOOST_TEST(j["partition"] == 3);
  BOOST_TEST(j["offset"] == 41);
  BOOST_TEST(j["sequence"] == 4);
  BOOST_TEST(j["time"] == "2026-12-01T12:00:00.25Z");
  BOOST_TEST(j["payload"]["writable_bytes"] == 21474836480ull);

  events::exec_finished f;
  f.exec_id = "ex-1";
  f.exit_code = -1;
  f.signal = 9;
  f.timed_out = true;
  f.duration = 1500ms;
  s.event.body = f;
  const auto line = event_line(s);
  BOOST_TEST(line.find("exec_id=ex-1 outcome=completed exit_code=-1 signal=9 timed_out=true "
                       "duration=1s500ms stdout_bytes=0 stderr_bytes=0") != std::string::npos,
             line);

  events::command_rejected r;
  r.command = events::command_kind::exec;
  r.code = errc::conflict;
  r.message = "sandbox sb-1 is paused; resume it before exec";
  s.event.body = r;
  BOOST_TEST(event_line(s).find("command=exec code=conflict message=\"sandbox sb-1 is paused; "
                                "resume it before exec\"") != std::string::npos);

  events::exec_started e;
  e.exec_id = "ex-2";
  e.argv = {"sh", "-c", "exit 42"};
  e.env = {{"A", "1"}, {"TOKEN", "", true}};
  s.event.body = e;
  BOOST_TEST(event_line(s).find("argv=[sh -c \"exit 42\"] env=[A \"TOKEN (secret)\"]") !=
               std::string::npos,
             event_line(s));
  // Every payload kind has a view (a new kind without one would not compile; an empty one
  // must still be an object).
  s.event.body = events::started{};
  BOOST_TEST(event_json(s)["payload"].is_object());
}

BOOST_AUTO_TEST_CASE(the_published_bill_prints_one_dollar_exactly) {
  // 4 GiB running 10 h: 40 GiB-h x 0.015 = 0.60; 20 GiB kept 730 h: 20 GiB-month x 0.02 = 0.40.
  api::bill_report r;
  api::bill_line l;
  l.tenant = "dev";
  l.sandbox_id = "sb-1";
  l.from_ns = ns_of("2026-01-01T00:00:00Z");
  l.to_ns = ns_of("2026-02-01T00:00:00Z");
  l.compute_gib_seconds = 4.0 * 10 * 3600;
  l.storage_gib_seconds = 20.0 * 730 * 3600;
  l.compute_micros = 600'000;
  l.storage_micros = 400'000;
  l.event_ids = {"sb-1:2", "sb-1:3", "sb-1:4", "sb-1:7"};
  r.lines = {l};
  r.total_compute_micros = 600'000;
  r.total_storage_micros = 400'000;
  r.total_micros = 1'000'000;
  bill_period p{"dev", utc("2026-01-01"), utc("2026-02-01"), api::bill_grouping::sandbox};
  const auto text = bill_text(p, r);
  BOOST_TEST(text.find("sb-1     40.000000      20.000000          $0.600000  $0.400000  "
                       "$1.000000  sb-1:2 sb-1:3 sb-1:4 sb-1:7") != std::string::npos,
             text);
  BOOST_TEST(text.find("total") != std::string::npos);
  BOOST_TEST(text.find("$1.000000\n") != std::string::npos);
  const auto j = bill_json(p, r);
  BOOST_TEST(j["total_usd"] == "1.000000");
  BOOST_TEST(j["total_micros"] == 1'000'000);
  BOOST_TEST(j["lines"][0]["compute_usd"] == "0.600000");
  BOOST_TEST(j["lines"][0]["events"].size() == 4u);
  const auto csv = bill_csv(p, r);
  BOOST_TEST(csv.find("dev,sb-1,2026-01-01T00:00:00Z,2026-02-01T00:00:00Z,144000.000000,"
                      "52560000.000000,0.600000,0.400000,1.000000,sb-1:2 sb-1:3 sb-1:4 sb-1:7\n") !=
               std::string::npos,
             csv);
  BOOST_TEST(csv.find("dev,total,2026-01-01T00:00:00Z,2026-02-01T00:00:00Z,,,0.600000,0.400000,"
                      "1.000000,\n") != std::string::npos);
  BOOST_TEST(usd(1) == "0.000001");
  BOOST_TEST(usd(-5) == "-0.000005");
  BOOST_TEST(usd(12'345'678'901) == "12345.678901");
}

BOOST_AUTO_TEST_CASE(audit_verify_names_the_first_bad_row) {
  api::audit_check ok;
  ok.checked_rows = 12;
  BOOST_TEST(audit_check_text(ok) == "the audit chain holds: 12 rows checked\n");
  BOOST_TEST(audit_check_json(ok)["ok"] == true);
  api::audit_check bad = ok;
  bad.problems = {{"dev", 3, 5, "sb-1:5", "edited", "the row's hash does not match its content"},
                  {"dev", 3, 6, "sb-1:6", "edited", "x"}};
  const auto text = audit_check_text(bad);
  BOOST_TEST(text.find("first bad row: tenant dev, partition 3, position 5 (event sb-1:5): "
                       "edited: the row's hash does not match its content") != std::string::npos,
             text);
  BOOST_TEST(text.find("1 more problem (--json lists them all)") != std::string::npos);
  BOOST_TEST(audit_check_json(bad)["ok"] == false);
  BOOST_TEST(audit_check_json(bad)["problems"].size() == 2u);
}

BOOST_AUTO_TEST_CASE(files_exec_results_and_progress) {
  api::dir_listing l;
  l.entries = {{"src", {"/workspace/src", api::file_type::directory, 4096, 0755, 0}},
               {"a.txt", {"/workspace/a.txt", api::file_type::regular, 12, 0644, 0}}};
  const auto j = listing_json("/workspace", l);
  BOOST_TEST(j["entries"][1]["path"] == "/workspace/a.txt");
  BOOST_TEST(j["entries"][1]["mode"] == "0644");
  BOOST_TEST(j["entries"][0]["type"] == "directory");
  BOOST_TEST(listing_json("/", l)["entries"][0]["path"] == "/src");
  const auto table = listing_table(l);
  BOOST_TEST(table.find("drwxr-xr-x") != std::string::npos);
  BOOST_TEST(table.find("src/") != std::string::npos);

  api::exec_result r;
  r.exec_id = "ex-1";
  r.exit_code = -1;
  r.signal = 9;
  r.timed_out = true;
  BOOST_TEST(exec_result_json(r)["exit_code"] == 137);
  BOOST_TEST(exec_ending_note(r, 1s) == "timed out after 1s; its processes were killed (SIGKILL)");
  r.timed_out = false;
  r.signal = 0;
  r.exit_code = 3;
  BOOST_TEST(exec_ending_note(r, 0s).empty());
  BOOST_TEST(argv_text({"sh", "-c", "echo 'hi'"}) == "sh -c 'echo '\"'\"'hi'\"'\"''");

  BOOST_TEST(render_progress(0, 100 << 20, 0, 10) == "[..........]   0%  0 B / 100.0 MiB");
  BOOST_TEST(render_progress(50 << 20, 100 << 20, 2, 10) ==
             "[#####.....]  50%  50.0 MiB / 100.0 MiB  25.0 MiB/s");
  BOOST_TEST(render_progress(3 << 20, 0, 0, 10) == "3.0 MiB");
  // Small files and non-terminals never get a bar.
  BOOST_TEST(!progress_bar("x", k_progress_min_bytes - 1, true).shown());
  BOOST_TEST(!progress_bar("x", 1u << 30, false).shown());
  BOOST_TEST(progress_bar("x", k_progress_min_bytes, true).shown());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(terminal_text_escapes)

BOOST_AUTO_TEST_CASE(c0_controls_and_del_are_shown_as_hex_escapes) {
  BOOST_TEST(terminal_text("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07");
  BOOST_TEST(terminal_text("a\nb") == "a\\x0ab");
  BOOST_TEST(terminal_text("a\rb") == "a\\x0db");
  BOOST_TEST(terminal_text("a\tb") == "a\\x09b");
  BOOST_TEST(terminal_text("\x7f") == "\\x7f");
  BOOST_TEST(terminal_text(std::string("a\0b", 3)) == "a\\x00b");
  BOOST_TEST(terminal_text("\x1f\x01") == "\\x1f\\x01");
  BOOST_TEST(terminal_text("\x1b[2J\x1b[H") == "\\x1b[2J\\x1b[H"); // clears the screen
}

BOOST_AUTO_TEST_CASE(c1_controls_are_escaped_raw_and_utf8_encoded) {
  BOOST_TEST(terminal_text("\x9b"
                           "31m") == "\\x9b31m"); // a raw 8-bit CSI
  BOOST_TEST(terminal_text("\x80\x9f") == "\\x80\\x9f");
  BOOST_TEST(terminal_text("\xc2\x9b"
                           "2J") == "\\xc2\\x9b2J"); // U+009B, CSI encoded as UTF-8
  BOOST_TEST(terminal_text("\xc2\x80\xc2\x9f") == "\\xc2\\x80\\xc2\\x9f");
  BOOST_TEST(terminal_text("\xc2\xa0") == "\xc2\xa0"); // U+00A0 is past the C1 block
}

BOOST_AUTO_TEST_CASE(a_backslash_is_doubled_so_an_escape_cannot_be_faked) {
  BOOST_TEST(terminal_text("\\x1b") == "\\\\x1b");
  BOOST_TEST(terminal_text("a\\b") == "a\\\\b");
  BOOST_TEST(terminal_text("\x1b") != terminal_text("\\x1b"));
}

BOOST_AUTO_TEST_CASE(printable_ascii_and_utf8_text_pass_unchanged) {
  for (const std::string s :
       {"", "sb-0a1b2c3d4e5f", "customer=jane doe", "café", "日本", "\xf0\x9f\x98\x80", "«»"})
    BOOST_TEST(terminal_text(s) == s);
  // Continuation bytes 0x80-0x9f inside a well-formed sequence are not C1 controls.
  BOOST_TEST(terminal_text("\xe6\x97\xa5\xe5\x9c\x8b") == "\xe6\x97\xa5\xe5\x9c\x8b");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_are_escaped_one_by_one) {
  BOOST_TEST(terminal_text("caf\xe9") == "caf\\xe9");             // Latin-1
  BOOST_TEST(terminal_text("\xed\xa0\x80") == "\\xed\\xa0\\x80"); // a surrogate
  BOOST_TEST(terminal_text("\xc0\xaf") == "\\xc0\\xaf");          // overlong
  BOOST_TEST(terminal_text("\xe6\x97") == "\\xe6\\x97");          // cut short
  BOOST_TEST(terminal_text("\xff") == "\\xff");
}

BOOST_AUTO_TEST_CASE(quoted_text_escapes_the_quote_too) {
  BOOST_TEST(quoted_terminal_text("a \"b\"\n") == "\"a \\\"b\\\"\\x0a\"");
  BOOST_TEST(quoted_terminal_text("") == "\"\"");
}

BOOST_AUTO_TEST_CASE(tables_fields_and_event_lines_escape_tenant_strings) {
  const std::string hostile = "\x1b]0;pwned\x07\nfake row";
  const std::string shown = "\\x1b]0;pwned\\x07\\x0afake row";
  BOOST_TEST(render_table({"NAME"}, {{hostile}}) == "NAME\n" + shown + "\n");
  // Columns are padded to the escaped cell, so the next column stays aligned.
  BOOST_TEST(render_table({"A", "B"}, {{"\x1b", "x"}}) == "A     B\n\\x1b  x\n");
  BOOST_TEST(render_fields({{"labels", "k=" + hostile}}) == "labels:  k=" + shown + "\n");
  BOOST_TEST(render_fields({{"layers", "a"}, {"", "b"}, {"size", "1"}}) ==
             "layers:  a\n         b\nsize:    1\n");

  api::sandbox_summary s;
  s.id = "sb-1";
  s.labels = {{"k\x1b", hostile}};
  const auto table = sandbox_table({s});
  BOOST_TEST(table.find('\x1b') == std::string::npos, table);
  BOOST_TEST(table.find('\x07') == std::string::npos, table);
  BOOST_TEST(std::count(table.begin(), table.end(), '\n') == 2, table);
  BOOST_TEST(table.find("k\\x1b=" + shown) != std::string::npos, table);

  api::dir_listing l;
  l.entries.emplace_back();
  l.entries.back().name = "evil\x1b[2J\x07\nname";
  const auto ls = listing_table(l);
  BOOST_TEST(std::count(ls.begin(), ls.end(), '\n') == 2, ls);
  BOOST_TEST(ls.find("evil\\x1b[2J\\x07\\x0aname") != std::string::npos, ls);

  api::streamed_event e;
  e.event.sandbox_id = "sb-1";
  e.event.principal = "dev";
  events::created c;
  c.labels = {{"k\x1b", hostile}, {"plain", "a\x9b\\b"}};
  e.event.body = c;
  auto line = event_line(e);
  BOOST_TEST(std::count(line.begin(), line.end(), '\n') == 1, line);
  BOOST_TEST(line.find("labels={k\\x1b=\"" + shown + "\",plain=a\\x9b\\\\b}") != std::string::npos,
             line);
  events::file_written w;
  w.path = "/workspace/\x1b]0;x\x07";
  e.event.body = w;
  line = event_line(e);
  BOOST_TEST(line.find("path=/workspace/\\x1b]0;x\\x07 ") != std::string::npos, line);
  BOOST_TEST(event_json(e)["payload"]["path"] == w.path); // JSON keeps the bytes
  events::exec_started x;
  x.argv = {"printf", "\x1b[31m"};
  e.event.body = x;
  line = event_line(e);
  BOOST_TEST(line.find("argv=[printf \\x1b[31m]") != std::string::npos, line);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(connection)

namespace {
environment fake(std::map<std::string, std::string> vars,
                 std::map<std::string, std::string> files) {
  environment e;
  e.get = [vars](const char* n) -> std::optional<std::string> {
    auto it = vars.find(n);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  e.read_file = [files](const std::string& p) -> std::optional<std::string> {
    auto it = files.find(p);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  return e;
}
} // namespace

BOOST_AUTO_TEST_CASE(flags_win_over_the_environment_and_it_over_the_defaults) {
  auto o = resolve_connection({}, fake({}, {{"./var/dev-token", "sbd_dev\n"}}));
  BOOST_REQUIRE(o.ok());
  BOOST_TEST(o->address == "unix:./var/sandboxd.sock");
  BOOST_TEST(o->token == "sbd_dev");

  const auto env = fake({{"SANDBOXD_ADDR", "tcp:10.0.0.1:7000"}, {"SANDBOXD_TOKEN", "from-env"}},
                        {{"./var/dev-token", "sbd_dev"}, {"/etc/t", "from-file \n"}});
  o = resolve_connection({}, env);
  BOOST_TEST(o->address == "tcp:10.0.0.1:7000");
  BOOST_TEST(o->token == "from-env");
  o = resolve_connection({"unix:/s", "", "/etc/t", ""}, env);
  BOOST_TEST(o->address == "unix:/s");
  BOOST_TEST(o->token == "from-file");
  o = resolve_connection({"", "from-flag", "/etc/t", "/ca.pem"}, env);
  BOOST_TEST(o->token == "from-flag");
  BOOST_TEST(o->tls_trusted_file == "/ca.pem");
  o = resolve_connection({}, fake({{"SANDBOXD_TOKEN_FILE", "/etc/t"}}, {{"/etc/t", "tf"}}));
  BOOST_TEST(o->token == "tf");
}

BOOST_AUTO_TEST_CASE(no_token_or_an_unreadable_token_file_says_what_to_do) {
  auto o = resolve_connection({}, fake({}, {}));
  BOOST_REQUIRE(!o.ok());
  BOOST_TEST(o.err().message.find("no token: pass --token or --token-file, or set "
                                  "SANDBOXD_TOKEN") != std::string::npos);
  o = resolve_connection({"", "", "/missing", ""}, fake({}, {{"./var/dev-token", "x"}}));
  BOOST_REQUIRE(!o.ok());
  BOOST_TEST(o.err().message.find("cannot read the token file /missing (--token-file)") !=
             std::string::npos);
}

// A stock build's progress lines, as the first create shows them: the percentage once known,
// the phase escaped like any line for people.
BOOST_AUTO_TEST_CASE(build_progress_lines_name_the_template_the_percentage_and_the_phase) {
  BOOST_TEST(
    cli::build_progress_line("python", "unpacking the cached python root filesystem", 0.92) ==
    "python:  92% unpacking the cached python root filesystem");
  BOOST_TEST(cli::build_progress_line("python", "template python is ready", 1.0) ==
             "python: 100% template python is ready");
  BOOST_TEST(cli::build_progress_line("debian", "building debian", -1) ==
             "debian: building debian");
  BOOST_TEST(cli::build_progress_line("node", "apt says \x1b]0;x\x07", -1) ==
             "node: apt says \\x1b]0;x\\x07");
}

BOOST_AUTO_TEST_SUITE_END()
