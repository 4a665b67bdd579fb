// sandboxctl driving a real sandboxd (crun sandboxes, the embedded PostgreSQL and file log),
// both as processes, through every command: the sandbox lifecycle, exit codes and messages
// of every error class, --json of every command, events and watch, bill and audit, audit
// verify after a row is edited in SQL; exec (exit codes, stdin bytes, timeouts, a 90 s
// command, background execs) and the file commands. Every --json document is checked against
// its documented shape (e2e_support.hpp).
//
// One daemon for the whole binary (its tenant quota of memory is what makes
// resource_exhausted reachable); each case makes the sandboxes it changes.
#define BOOST_TEST_MODULE cli_e2e
#include "tests/e2e/e2e_support.hpp"

#include "cli/time_arg.hpp"

#include <pqxx/pqxx>

#include <ranges>
#include <regex>
#include <thread>

using namespace sandboxd::test;
using sandboxd::cli::parse_time;

namespace {

constexpr const char* k_quota_mib = "65536";

daemon_process& shared() {
  static daemon_process d(
    {"--runtime", "crun", "--quota-memory-mib", k_quota_mib, "--max-memory-mib", "100000"});
  return d;
}

// A running sandbox that the exec and read-only cases share.
const std::string& shared_sandbox() {
  static const std::string id = create(shared(), {"--runtime", "crun", "--memory", "256"});
  return id;
}

// The one line sandboxctl prints for an error: "sandboxctl: <code>: <message>".
void expect_error(const ctl_result& r, int exit_code, const std::string& code,
                  const std::string& says) {
  BOOST_TEST(r.exit_code == exit_code, r);
  BOOST_TEST(r.out.empty(), r);
  BOOST_TEST(r.err.rfind("sandboxctl: " + code + ": ", 0) == 0u, r);
  BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r);
  BOOST_TEST(r.err.find(says) != std::string::npos, "'" << says << "' not in: " << r.err);
}

// The command started at once whose 90 s run is checked at the end (by the last case).
struct long_exec {
  pid_t pid = -1;
  std::string out_path;
  std::chrono::steady_clock::time_point started;
};

long_exec& the_long_exec() {
  static long_exec l = [] {
    long_exec e;
    e.out_path = shared().dir().path() + "/long-exec.out";
    e.started = std::chrono::steady_clock::now();
    const std::string ctl = sandboxctl_bin(); // nothing is allocated in the child
    e.pid = ::fork();
    if (e.pid == 0) {
      const int fd = ::open(e.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setenv("SANDBOXD_ADDR", shared().address().c_str(), 1);
      ::setenv("SANDBOXD_TOKEN", shared().token().c_str(), 1);
      ::execl(ctl.c_str(), ctl.c_str(), "exec", shared_sandbox().c_str(), "--", "sh", "-c",
              "sleep 90; echo finished after 90 s", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return e;
  }();
  return l;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sandboxes, *utf::precondition(crun_can_run))

BOOST_AUTO_TEST_CASE(create_get_list_set_timeout_pause_resume_delete) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "256", "--cpus", "0.5", "--label",
                             "suite=e2e", "--label", "case=lifecycle", "--idle-timeout", "15m",
                             "--request-id", "lifecycle-1"});
  BOOST_TEST(std::regex_match(id, std::regex("sb-[0-9a-f]+")), id);
  // The same request id returns the same sandbox.
  BOOST_TEST(create(d, {"--runtime", "crun", "--request-id", "lifecycle-1"}) == id);

  const auto text = ctl_ok(d, {"get", id});
  for (const char* line :
       {"state:             running\n", "runtime:           crun\n", "memory:            256 MiB\n",
        "cpus:              0.5\n", "idle timeout:      15m\n", "end time:          none\n"})
    BOOST_TEST(text.find(line) != std::string::npos, line << " not in:\n" << text);
  BOOST_TEST(text.find("labels:            ") != std::string::npos);
  BOOST_TEST(text.find("case=lifecycle") != std::string::npos);

  // list reads the read model, which lags: the row shows up within moments.
  std::string listed;
  BOOST_TEST(eventually([&] {
    listed = ctl_ok(d, {"list", "--label", "case=lifecycle"});
    return listed.find(id) != std::string::npos;
  }));
  BOOST_TEST(listed.rfind("ID ", 0) == 0u, listed);
  BOOST_TEST(ctl_ok(d, {"list", "-q", "--label", "case=lifecycle"}) == id + "\n");
  BOOST_TEST(ctl_ok(d, {"list", "-q", "--label", "case=nothing"}).empty());

  // set-timeout: the end time moves to about now + 1h.
  const auto before = std::chrono::system_clock::now();
  auto j = json::parse(ctl_ok(d, {"--json", "set-timeout", id, "--timeout", "1h"}));
  BOOST_TEST(j["lifetime_seconds"].get<double>() > 3500);
  auto end = parse_time(j["end_time"].get<std::string>(), {});
  BOOST_REQUIRE(end.ok());
  const auto left = *end - before;
  BOOST_TEST(left > std::chrono::minutes(59));
  BOOST_TEST(left < std::chrono::minutes(61));
  j = json::parse(ctl_ok(d, {"--json", "set-timeout", id, "--idle-timeout", "0"}));
  BOOST_TEST(j["idle_timeout_seconds"] == 0);
  auto usage = ctl(d, {"set-timeout", id});
  BOOST_TEST(usage.exit_code == 200, usage);

  BOOST_TEST(ctl_ok(d, {"pause", id, "--mode", "filesystem"}) == id + " paused (filesystem)\n");
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "get", id}))["state"] == "paused");
  BOOST_TEST(eventually([&] {
    return ctl_ok(d, {"list", "-q", "--state", "paused", "--label", "case=lifecycle"}) == id + "\n";
  }));
  BOOST_TEST(ctl_ok(d, {"resume", id}) == id + " running\n");
  BOOST_TEST(ctl_ok(d, {"pause", id, "--mode", "memory"}) == id + " paused (memory)\n");
  j = json::parse(ctl_ok(d, {"--json", "get", id}));
  BOOST_TEST(j["pause_mode"] == "memory");
  BOOST_TEST(ctl_ok(d, {"resume", id}) == id + " running\n");

  BOOST_TEST(ctl_ok(d, {"delete", id}) == id + " deleted\n");
  expect_error(ctl(d, {"get", id}), 201, "not_found", "sandbox " + id + " does not exist");
  BOOST_TEST(eventually([&] {
    return ctl_ok(d, {"list", "-q", "--all", "--state", "deleted", "--label", "case=lifecycle"}) ==
           id + "\n";
  }));
}

BOOST_AUTO_TEST_CASE(every_error_class_has_its_exit_code_and_one_line_that_says_what_to_do) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "128"});

  // usage: 200, nothing sent.
  expect_error(ctl(d, {"get"}), 200, "usage", "id is required; see 'sandboxctl get --help'");
  expect_error(ctl(d, {"nosuch"}), 200, "usage", "nosuch");
  expect_error(ctl(d, {"create", "--timeout", "5x"}), 200, "usage",
               "--timeout: '5x' is not a duration");
  expect_error(ctl(d, {"bill", "--from", "yesterday", "--to", "now"}), 200, "usage",
               "--from: 'yesterday' is not a time");
  expect_error(ctl(d, {"kill", id, "ex-1", "--signal", "NOPE"}), 200, "usage", "not a signal");
  expect_error(ctl(d, {"pause", id, "--mode", "disk"}), 200, "usage", "not a pause mode");
  // not_found: 201.
  expect_error(ctl(d, {"get", "sb-000000000000"}), 201, "not_found",
               "sandbox sb-000000000000 does not exist; check the sandbox id");
  expect_error(ctl(d, {"pause", "sb-000000000000"}), 201, "not_found", "does not exist");
  // conflict: 202.
  expect_error(ctl(d, {"resume", id}), 202, "conflict", "is running");
  // permission_denied: 203.
  expect_error(ctl(d, {"get", id}, {"", {{"SANDBOXD_TOKEN", "sbd_not-a-token"}}}), 203,
               "permission_denied", "token");
  // invalid_argument: 204.
  expect_error(ctl(d, {"create", "--runtime", "runc"}), 204, "invalid_argument",
               "use one of: crun");
  expect_error(ctl(d, {"list", "--page-token", "garbage"}), 204, "invalid_argument", "page token");
  // resource_exhausted: 205 (the daemon's tenant quota of memory).
  expect_error(ctl(d, {"create", "--runtime", "crun", "--memory", "70000"}), 205,
               "resource_exhausted", "memory");
  // Over the node's ceiling of one sandbox: invalid_argument, naming the field and ceiling.
  expect_error(ctl(d, {"create", "--runtime", "crun", "--memory", "100001"}), 204,
               "invalid_argument",
               "limits.memoryMib 100001 MiB is over this node's ceiling of 100000 MiB");
  // unavailable: 206 (no daemon there).
  expect_error(ctl(d, {"get", id}, {"", {{"SANDBOXD_ADDR", "unix:" + d.dir().path() + "/none"}}}),
               206, "unavailable", "cannot reach sandboxd at unix:");
  // A missing token: the same local problem as a bad argument.
  expect_error(ctl(d, {"get", id}, {"", {{"SANDBOXD_TOKEN", ""}}, d.dir().path()}), 204,
               "invalid_argument", "no token");

  // --json: the error is the document on stdout, the line still on stderr.
  auto r = ctl(d, {"--json", "get", "sb-000000000000"});
  BOOST_TEST(r.exit_code == 201);
  BOOST_TEST(r.doc()["error"]["code"] == "not_found");
  BOOST_TEST(r.doc()["error"]["exit_code"] == 201);
  BOOST_TEST(r.err.rfind("sandboxctl: not_found: ", 0) == 0u);
  r = ctl(d, {"--json", "get"});
  BOOST_TEST(r.exit_code == 200);
  BOOST_TEST(r.doc()["error"]["code"] == "usage");
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(json_of_every_sandbox_and_report_command_parses_with_its_fields) {
  auto& d = shared();
  auto created = json::parse(ctl_ok(d, {"--json", "create", "--runtime", "crun", "--memory", "128",
                                        "--label", "case=json", "--timeout", "10m"}));
  const std::string id = created["id"];
  for (const char* f : {"id", "state", "template", "runtime", "created_at", "end_time", "limits",
                        "labels", "tenant", "sequence"})
    BOOST_TEST(created.contains(f), f);
  BOOST_TEST(created["state"] == "running");
  BOOST_TEST(created["runtime"] == "crun");
  BOOST_TEST(created["limits"]["memory_mib"] == 128);
  BOOST_TEST(created["labels"]["case"] == "json");
  BOOST_TEST(!created["end_time"].is_null());

  auto got = json::parse(ctl_ok(d, {"get", id, "--json"})); // --json after the command
  BOOST_TEST(got["id"] == id);
  BOOST_TEST(got["created_at"] == created["created_at"]);

  json listed;
  BOOST_TEST(eventually([&] {
    listed = json::parse(ctl_ok(d, {"--json", "list", "--label", "case=json"}));
    return listed["sandboxes"].size() == 1u;
  }));
  BOOST_TEST(listed["sandboxes"][0]["id"] == id);
  BOOST_TEST(listed.contains("next_page_token"));
  for (const char* f : {"id", "state", "template", "limits", "labels", "created_at", "updated_at"})
    BOOST_TEST(listed["sandboxes"][0].contains(f), f);

  BOOST_TEST(json::parse(ctl_ok(
               d, {"--json", "set-timeout", id, "--lifetime", "2h"}))["lifetime_seconds"] == 7200);
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "pause", id}))["state"] == "paused");
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "resume", id}))["state"] == "running");

  auto events = ctl(d, {"--json", "events", id});
  BOOST_REQUIRE_EQUAL(events.exit_code, 0);
  auto lines = events.lines();
  BOOST_REQUIRE(lines.size() >= 5u);
  for (const auto& e : lines)
    for (const char* f : {"time", "sandbox_id", "sequence", "kind", "tenant", "principal",
                          "event_id", "partition", "offset", "payload"})
      BOOST_TEST(e.contains(f), f);
  BOOST_TEST(lines.front()["kind"] == "created");
  BOOST_TEST(lines.front()["payload"]["memory_mib"] == 128);
  BOOST_TEST(lines.back()["kind"] == "resumed");

  auto deleted = json::parse(ctl_ok(d, {"--json", "delete", id}));
  BOOST_TEST(deleted["id"] == id);
  BOOST_TEST(deleted["state"] == "deleted");

  auto bill = json::parse(ctl_ok(d, {"--json", "bill", "--from", "-1h", "--to", "+1h"}));
  for (const char* f : {"tenant", "from", "to", "by", "lines", "total_micros", "total_usd"})
    BOOST_TEST(bill.contains(f), f);
  BOOST_TEST(bill["tenant"] == "dev");
  auto by_hour =
    json::parse(ctl_ok(d, {"--json", "bill", "--from", "-1h", "--to", "now", "--by", "hour"}));
  BOOST_TEST(by_hour["by"] == "hour");

  auto audit = json::parse(ctl_ok(d, {"--json", "audit", "--sandbox", id}));
  BOOST_REQUIRE(!audit["rows"].empty());
  for (const char* f : {"tenant", "partition", "position", "event_id", "sandbox_id", "time",
                        "principal", "action", "outcome", "detail", "hash"})
    BOOST_TEST(audit["rows"][0].contains(f), f);
  auto verify = json::parse(ctl_ok(d, {"--json", "audit", "verify"}));
  BOOST_TEST(verify["ok"] == true);
  BOOST_TEST(verify["checked_rows"].get<int>() > 0);

  auto version = json::parse(ctl_ok(d, {"--json", "version"}));
  BOOST_TEST(version["sandboxd"] == "0.1.0");
  BOOST_TEST(version["tenant"] == "dev");
  auto completion = json::parse(ctl_ok(d, {"--json", "completion", "bash"}));
  BOOST_TEST(completion["script"].get<std::string>().find("complete -F _sandboxctl") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(events_and_watch_follow_a_sandbox_to_its_end) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "128"});
  ctl_ok(d, {"pause", id});
  ctl_ok(d, {"resume", id});
  auto text = ctl_ok(d, {"events", id});
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  BOOST_REQUIRE(lines.size() >= 6u);
  BOOST_TEST(lines[0].find("  " + id + "  1  created  dev  ") != std::string::npos, lines[0]);
  BOOST_TEST(lines[0].find("runtime=crun memory_mib=128") != std::string::npos, lines[0]);
  BOOST_TEST(text.find("  pause_requested  dev  mode=filesystem reason=user") != std::string::npos);
  BOOST_TEST(lines.back().find("  resumed  system") != std::string::npos, lines.back());

  // --from-seq starts at that event.
  auto from3 = ctl(d, {"--json", "events", id, "--from-seq", "3"}).lines();
  BOOST_REQUIRE(!from3.empty());
  BOOST_TEST(from3.front()["sequence"] == 3);
  BOOST_TEST(from3.size() == lines.size() - 2);

  // The whole log (admin), and from a partition offset on.
  auto all = ctl(d, {"--json", "events"}).lines();
  const auto mine =
    std::count_if(all.begin(), all.end(), [&](const json& e) { return e["sandbox_id"] == id; });
  BOOST_TEST(static_cast<std::size_t>(mine) == lines.size());
  const auto& third = from3.front();
  const std::string at = std::to_string(third["partition"].get<int>()) + ":" +
                         std::to_string(third["offset"].get<long>());
  auto from_offset = ctl(d, {"--json", "events", id, "--from-offset", at}).lines();
  BOOST_REQUIRE(!from_offset.empty());
  BOOST_TEST(from_offset.front()["sequence"] == 3);

  // watch: the events so far, then live ones, until the sandbox is deleted.
  ctl_result watched;
  std::thread watcher([&] { watched = ctl(d, {"watch", id}); });
  std::this_thread::sleep_for(500ms);
  ctl_ok(d, {"delete", id});
  watcher.join();
  BOOST_TEST(watched.exit_code == 0, watched);
  BOOST_TEST(watched.out.find("  delete_requested  dev  reason=user") != std::string::npos);
  BOOST_TEST(watched.out.find("  deleted  system") != std::string::npos, watched);
  BOOST_TEST(watched.out.find("  1  created  ") != std::string::npos);

  // A deleted sandbox's history still comes from the log.
  auto after = ctl_ok(d, {"events", id});
  BOOST_TEST(after.find("  deleted  system") != std::string::npos, after);
  expect_error(ctl(d, {"events", "sb-000000000000"}), 201, "not_found", "has no events");
  expect_error(ctl(d, {"events", "--from-seq", "2"}), 200, "usage", "needs a sandbox id");
}

BOOST_AUTO_TEST_CASE(bill_and_audit_show_the_session) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "1024"});
  ctl_ok(d, {"pause", id});
  ctl_ok(d, {"delete", id});
  // The bill lists the sandbox once its intervals are projected.
  std::string bill;
  BOOST_TEST(eventually([&] {
    bill = ctl_ok(d, {"bill", "--from", "-1h", "--to", "+1h"});
    return bill.find(id) != std::string::npos;
  }));
  BOOST_TEST(bill.rfind("bill of tenant dev from ", 0) == 0u, bill);
  BOOST_TEST(bill.find("SANDBOX") != std::string::npos);
  BOOST_TEST(bill.find("\ntotal ") != std::string::npos);
  BOOST_TEST(bill.find(id + ":2") != std::string::npos, bill); // `started` opened compute
  auto csv = ctl_ok(d, {"bill", "--from", "-1h", "--to", "+1h", "--csv"});
  BOOST_TEST(csv.rfind("tenant,sandbox_id,from,to,", 0) == 0u);
  BOOST_TEST(csv.find("dev," + id + ",") != std::string::npos);

  std::string audit;
  BOOST_TEST(eventually([&] {
    audit = ctl_ok(d, {"audit", "--sandbox", id});
    return audit.find("deleted") != std::string::npos;
  }));
  for (const char* action :
       {"created", "started", "pause_requested", "paused", "delete_requested", "deleted"})
    BOOST_TEST(audit.find(std::string("  ") + action + " ") != std::string::npos, action);
  auto verify = ctl(d, {"audit", "verify"});
  BOOST_TEST(verify.exit_code == 0, verify);
  BOOST_TEST(verify.out.rfind("the audit chain holds: ", 0) == 0u, verify);
}

// redact: refused until the sandbox is deleted; then its labels, command lines and paths go
// from the read models (list, audit) while the audit chain and the read models still verify.
BOOST_AUTO_TEST_CASE(redact_removes_a_deleted_sandboxs_private_details,
                     *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto id =
    create(d, {"--runtime", "crun", "--memory", "128", "--label", "customer=jane-doe"});
  auto in = ctl(d, {"write", id, "/tmp/jane-doe-taxes.txt"}, {"numbers"});
  BOOST_REQUIRE_MESSAGE(in.exit_code == 0, in);
  expect_error(ctl(d, {"redact", id}), 202, "conflict", "delete it first");
  ctl_ok(d, {"delete", id});
  BOOST_TEST(ctl_ok(d, {"redact", id, "--reason", "privacy request 7"}) == id + " redacted\n");
  // A repeat has nothing left to do.
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "redact", id}))["redacted"] == true);
  expect_error(ctl(d, {"redact", "sb-000000000000"}), 201, "not_found", "does not exist");

  json rows;
  BOOST_TEST(eventually([&] {
    rows = json::parse(ctl_ok(d, {"--json", "audit", "--sandbox", id}))["rows"];
    return std::any_of(rows.begin(), rows.end(),
                       [](const json& r) { return r["action"] == "redacted"; });
  }));
  int redacted = 0;
  for (const auto& r : rows) {
    BOOST_TEST(r["detail"].get<std::string>().find("jane") == std::string::npos, r.dump());
    redacted += r["redacted"].get<bool>() ? 1 : 0;
    if (r["action"] == "redacted")
      BOOST_TEST(r["detail"] == "privacy request 7");
  }
  BOOST_TEST(redacted >= 2, rows.dump()); // the write's intent and outcome
  BOOST_TEST(ctl_ok(d, {"audit", "--sandbox", id}).find("(redacted)") != std::string::npos);
  BOOST_TEST(ctl_ok(d, {"list", "-q", "--all", "--label", "customer=jane-doe"}).empty());
  auto listed = json::parse(ctl_ok(d, {"--json", "list", "--all", "--state", "deleted"}));
  for (const auto& s : listed["sandboxes"])
    if (s["id"] == id)
      BOOST_TEST(s["labels"].empty(), s.dump());
  auto verify = ctl(d, {"audit", "verify"});
  BOOST_TEST(verify.exit_code == 0, verify);
  auto models = ctl(d, {"projections", "verify"});
  BOOST_TEST(models.exit_code == 0, models);
}

// Bytes that are not text (a label, an argument) are refused before they reach the log, and
// the read models keep up: the projection never meets a row PostgreSQL would refuse.
BOOST_AUTO_TEST_CASE(
  labels_and_arguments_that_are_not_text_are_refused_and_never_stall_the_read_models,
  *utf::precondition(crun_can_run)) {
  auto& d = shared();
  expect_error(ctl(d, {"create", "--runtime", "crun", "--label", "k=\xff\xfe"}), 204,
               "invalid_argument", "is not UTF-8");
  const auto id = create(d, {"--runtime", "crun", "--memory", "128", "--label", "bytes=case"});
  expect_error(ctl(d, {"exec", id, "--", "echo", "\xff"}), 204, "invalid_argument", "is not UTF-8");
  for (const auto& line : ctl_ok(d, {"--json", "events", id}) | std::views::split('\n')) {
    const std::string l(line.begin(), line.end());
    BOOST_TEST(l.find("exec_started") == std::string::npos, l);
  }
  BOOST_TEST(eventually([&] {
    return ctl_ok(d, {"list", "-q", "--label", "bytes=case"}) == id + "\n";
  }));
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(help_of_every_command_has_an_example) {
  auto& d = shared();
  auto top = ctl(d, {"--help"});
  BOOST_TEST(top.exit_code == 0);
  for (const char* c :
       {"create", "get",    "list",   "set-timeout", "pause", "resume", "delete",    "exec", "ps",
        "kill",   "wait",   "write",  "read",        "ls",    "stat",   "mkdir",     "rm",   "mv",
        "cp-in",  "cp-out", "events", "watch",       "bill",  "audit",  "completion"}) {
    BOOST_TEST(top.out.find("\n  " + std::string(c) + " ") != std::string::npos, c);
    auto h = ctl(d, {c, "--help"});
    BOOST_TEST(h.exit_code == 0, c);
    const auto example = h.out.find("Example:\n  ");
    BOOST_TEST((example != std::string::npos &&
                h.out.find("sandboxctl " + std::string(c), example) != std::string::npos),
               c << ": " << h.out);
  }
  auto verify = ctl(d, {"audit", "verify", "--help"});
  BOOST_TEST(verify.out.find("Example:\n  sandboxctl audit verify") != std::string::npos);
  BOOST_TEST(ctl(d, {}).exit_code == 200);
  auto bash = ctl(d, {"completion", "bash"});
  BOOST_TEST(bash.exit_code == 0);
  BOOST_TEST(run_shell("bash -n <<'EOF'\n" + bash.out + "\nEOF").exit_code == 0);
  BOOST_TEST(ctl(d, {"completion", "zsh"}).out.rfind("#compdef sandboxctl", 0) == 0u);
}

// Last of the suite: it edits the shared daemon's audit log, then puts the row back.
BOOST_AUTO_TEST_CASE(audit_verify_fails_after_one_row_is_edited_in_sql) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "128"});
  ctl_ok(d, {"pause", id});
  std::vector<json> rows;
  BOOST_TEST(eventually([&] {
    rows =
      json::parse(ctl_ok(d, {"--json", "audit", "--sandbox", id}))["rows"].get<std::vector<json>>();
    return rows.size() >= 3;
  }));
  BOOST_REQUIRE(rows.size() >= 3);
  BOOST_REQUIRE_EQUAL(ctl(d, {"audit", "verify"}).exit_code, 0);
  const auto& victim = rows[1];
  const std::string event_id = victim["event_id"];
  std::string detail;
  {
    pqxx::connection c(d.pg_conninfo());
    pqxx::work tx(c);
    auto r = tx.exec_params("UPDATE audit_log SET detail = detail || ' (edited)' "
                            "WHERE event_id = $1 RETURNING detail",
                            event_id);
    BOOST_REQUIRE_EQUAL(r.size(), 1u);
    detail = r[0][0].as<std::string>();
    tx.commit();
  }
  auto broken = ctl(d, {"audit", "verify"});
  BOOST_TEST(broken.exit_code == 1, broken);
  BOOST_TEST(broken.out.find("first bad row: tenant dev, partition " +
                             std::to_string(victim["partition"].get<int>()) + ", position " +
                             std::to_string(victim["position"].get<long>()) + " (event " +
                             event_id + "): ") != std::string::npos,
             broken);
  auto as_json = ctl(d, {"--json", "audit", "verify"});
  BOOST_TEST(as_json.exit_code == 1);
  BOOST_TEST(as_json.doc()["ok"] == false);
  BOOST_TEST(as_json.doc()["problems"][0]["event_id"] == event_id);
  BOOST_TEST(as_json.doc()["problems"][0]["message"].get<std::string>().find("edited") !=
             std::string::npos);

  // Put back, the chain holds again.
  {
    pqxx::connection c(d.pg_conninfo());
    pqxx::work tx(c);
    tx.exec_params("UPDATE audit_log SET detail = $2 WHERE event_id = $1", event_id,
                   detail.substr(0, detail.size() - std::string(" (edited)").size()));
    tx.commit();
  }
  BOOST_TEST(ctl(d, {"audit", "verify"}).exit_code == 0);
  ctl_ok(d, {"delete", id});
}

// The connection flags win over the environment; without a valid token nothing is served.
BOOST_AUTO_TEST_CASE(addr_token_and_token_file_flags_connect) {
  auto& d = shared();
  const auto id = shared_sandbox();
  const std::string token_file = d.dir().path() + "/token";
  { std::ofstream(token_file) << d.token() << "\n"; }
  ctl_options wrong;
  wrong.env["SANDBOXD_ADDR"] = "unix:" + d.dir().path() + "/no-such.sock";
  wrong.env["SANDBOXD_TOKEN"] = "not-a-token";
  auto r = ctl(d, {"--json", "get", id, "--addr", d.address(), "--token", d.token()}, wrong);
  BOOST_TEST(r.exit_code == 0, r);
  BOOST_TEST(r.doc()["id"] == id);
  r = ctl(d, {"--addr", d.address(), "--token-file", token_file, "get", id}, wrong);
  BOOST_TEST(r.exit_code == 0, r);
  expect_error(ctl(d, {"get", id}, wrong), 206, "unavailable", "no-such.sock");
  expect_error(ctl(d, {"--addr", d.address(), "get", id}, wrong), 203, "permission_denied", "");
}

BOOST_AUTO_TEST_CASE(create_flags_reach_the_sandbox) {
  auto& d = shared();
  auto j = ctl(d, {"--json", "create", "--runtime", "crun", "--template", "base", "--memory", "128",
                   "--cpus", "0.5", "--disk", "256", "--lifetime", "2h", "--idle-timeout", "10m",
                   "--auto-pause=memory", "--request-id", "req-create-flags-1"})
             .doc();
  const std::string id = j["id"];
  BOOST_TEST(j["template"] == "base");
  BOOST_TEST(j["limits"]["disk_mib"] == 256);
  BOOST_TEST(j["limits"]["memory_mib"] == 128);
  BOOST_TEST(j["limits"]["cpu_millicores"] == 500);
  BOOST_TEST(j["lifetime_seconds"] == 7200);
  BOOST_TEST(j["idle_timeout_seconds"] == 600);
  BOOST_TEST(j["on_timeout"] == "pause:memory");
  // The same request id is the same sandbox, not a second one.
  auto again =
    ctl(d, {"--json", "create", "--runtime", "crun", "--template", "base", "--memory", "128",
            "--cpus", "0.5", "--disk", "256", "--lifetime", "2h", "--idle-timeout", "10m",
            "--auto-pause=memory", "--request-id", "req-create-flags-1"});
  BOOST_TEST(again.exit_code == 0, again);
  BOOST_TEST(again.doc()["id"] == id);
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(list_pages_with_limit_and_page_token) {
  auto& d = shared();
  std::set<std::string> made;
  for (int i = 0; i < 3; ++i)
    made.insert(create(d, {"--runtime", "crun", "--memory", "64", "--label", "case=pages"}));
  json first;
  BOOST_TEST(eventually([&] {
    first = ctl(d, {"--json", "list", "--label", "case=pages", "--limit", "2"}).doc();
    return first["sandboxes"].size() == 2u && !first["next_page_token"].get<std::string>().empty();
  }));
  auto second = ctl(d, {"--json", "list", "--label", "case=pages", "--limit", "2", "--page-token",
                        first["next_page_token"].get<std::string>()})
                  .doc();
  BOOST_TEST(second["sandboxes"].size() == 1u);
  BOOST_TEST(second["next_page_token"] == "");
  std::set<std::string> seen;
  for (const auto* page : {&first, &second})
    for (const auto& s : (*page)["sandboxes"])
      seen.insert(s["id"].get<std::string>());
  BOOST_TEST((seen == made));
  // For people the table says on stderr how to get the next page.
  auto text = ctl(d, {"list", "--label", "case=pages", "--limit", "2"});
  BOOST_TEST(text.err.find("--page-token") != std::string::npos, text);
  for (const auto& id : made)
    ctl_ok(d, {"delete", id});
}

// events --follow with no sandbox prints the whole log and then what comes; --from-offset with
// no sandbox starts a partition there (others from 0); watch --json prints JSON lines.
BOOST_AUTO_TEST_CASE(events_of_the_whole_log_follow_and_start_at_an_offset) {
  auto& d = shared();
  ctl_result followed;
  std::thread follower([&] {
    ctl_options o;
    o.env["SANDBOXD_ADDR"] = d.address();
    o.env["SANDBOXD_TOKEN"] = d.token();
    followed = run_process("/usr/bin/timeout",
                           {"-s", "INT", "8", sandboxctl_bin(), "--json", "events", "--follow"}, o);
  });
  std::this_thread::sleep_for(1s);
  const auto id = create(d, {"--runtime", "crun", "--memory", "64"});
  ctl_result watched;
  std::thread watcher([&] { watched = ctl(d, {"--json", "watch", id}); });
  std::this_thread::sleep_for(300ms);
  ctl_ok(d, {"delete", id});
  watcher.join();
  follower.join();
  // Whole lines only: the follower was stopped by a signal.
  const auto complete = followed.out.substr(0, followed.out.rfind('\n') + 1);
  std::vector<json> lines;
  std::istringstream in(complete);
  for (std::string l; std::getline(in, l);)
    lines.push_back(json::parse(l));
  std::vector<std::string> kinds;
  for (const auto& e : lines) {
    BOOST_TEST(sandboxd::cli::shape_problems(e, "event").empty(), e.dump());
    if (e["sandbox_id"] == id)
      kinds.push_back(e["kind"]);
  }
  BOOST_REQUIRE(!kinds.empty());
  BOOST_TEST(kinds.front() == "created");
  BOOST_TEST(kinds.back() == "deleted", followed);

  BOOST_TEST(watched.exit_code == 0, watched);
  const auto w = watched.lines();
  BOOST_REQUIRE(!w.empty());
  BOOST_TEST(w.front()["kind"] == "created");
  BOOST_TEST(w.back()["kind"] == "deleted");

  // From the offset of this sandbox's `deleted` on, its partition holds nothing of it before.
  const auto& last = w.back();
  const std::string at =
    std::to_string(last["partition"].get<int>()) + ":" + std::to_string(last["offset"].get<long>());
  auto from = ctl(d, {"--json", "events", "--from-offset", at}).lines();
  std::vector<std::string> mine;
  for (const auto& e : from)
    if (e["sandbox_id"] == id)
      mine.push_back(e["kind"]);
  BOOST_TEST((mine == std::vector<std::string>{"deleted"}));
}

BOOST_AUTO_TEST_CASE(bill_by_day_for_a_named_tenant_and_audit_between_times) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "64"});
  ctl_ok(d, {"delete", id});
  json bill;
  BOOST_TEST(eventually([&] {
    bill =
      ctl(d, {"--json", "bill", "--tenant", "dev", "--by", "day", "--from", "-1h", "--to", "+1h"})
        .doc();
    return !bill["lines"].empty();
  }));
  BOOST_TEST(bill["by"] == "day");
  BOOST_TEST(bill["tenant"] == "dev");
  // One line per day the period touches (two only across midnight), together what the hours
  // add up to.
  std::set<std::string> days;
  for (const auto& l : bill["lines"]) {
    BOOST_TEST(l["tenant"] == "dev");
    BOOST_TEST(days.insert(l["from"].get<std::string>().substr(0, 10)).second, l.dump());
  }
  // Running sandboxes of other cases add to the bill as it is asked: ask both until they
  // were asked within the same micro-dollar.
  BOOST_TEST(eventually([&] {
    auto daily = ctl(d, {"--json", "bill", "--tenant", "dev", "--by", "day", "--from", bill["from"],
                         "--to", bill["to"]})
                   .doc();
    auto hourly = ctl(d, {"--json", "bill", "--tenant", "dev", "--by", "hour", "--from",
                          bill["from"], "--to", bill["to"]})
                    .doc();
    return hourly["lines"].size() >= daily["lines"].size() &&
           hourly["total_micros"] == daily["total_micros"];
  }));
  auto other =
    ctl(d, {"--json", "bill", "--tenant", "nobody", "--from", "-1h", "--to", "+1h"}).doc();
  BOOST_TEST(other["lines"].empty());
  BOOST_TEST(other["total_micros"] == 0);

  json rows;
  BOOST_TEST(eventually([&] {
    rows =
      ctl(d, {"--json", "audit", "--sandbox", id, "--from", "-1h", "--to", "+1h"}).doc()["rows"];
    return std::any_of(rows.begin(), rows.end(),
                       [](const json& r) { return r["action"] == "deleted"; });
  }));
  BOOST_TEST(ctl(d, {"--json", "audit", "--sandbox", id, "--from", "+1h", "--to", "+2h"})
               .doc()["rows"]
               .empty());
  BOOST_TEST(ctl(d, {"--json", "audit", "--sandbox", id, "--from", "-2h", "--to", "-1h"})
               .doc()["rows"]
               .empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(exec)

BOOST_AUTO_TEST_CASE(the_command_exit_code_passes_through, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  the_long_exec(); // starts now; checked by the last case
  const auto& id = shared_sandbox();
  auto r = ctl(d, {"exec", id, "--", "sh", "-c", "exit 42"});
  BOOST_TEST(r.exit_code == 42, r);
  BOOST_TEST(r.err.empty(), r);
  r = ctl(d, {"exec", id, "--", "/no/such/binary"});
  BOOST_TEST(r.exit_code == 127, r);
  BOOST_TEST(r.err.find("sandboxctl:") == std::string::npos, r); // the shell's 127, not ours
  r = ctl(d, {"exec", id, "--", "sh", "-c", "kill -TERM $$"});
  BOOST_TEST(r.exit_code == 128 + 15, r);
  r = ctl(d, {"exec", id, "--", "true"});
  BOOST_TEST(r.exit_code == 0, r);
  auto j = ctl(d, {"--json", "exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 3"});
  BOOST_TEST(j.exit_code == 3);
  BOOST_TEST(j.doc()["exit_code"] == 3);
  BOOST_TEST(j.doc()["stdout"] == "out\n");
  BOOST_TEST(j.doc()["stderr"] == "err\n");
  BOOST_TEST(j.err.empty(), j);
}

BOOST_AUTO_TEST_CASE(output_streams_to_stdout_and_stderr, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  auto r = ctl(d, {"exec", shared_sandbox(), "--cwd", "/tmp", "--env", "GREETING=hi", "--", "sh",
                   "-c", "echo $GREETING; pwd; echo to-stderr >&2; seq 1 20000"});
  BOOST_TEST(r.exit_code == 0, r);
  std::string expected = "hi\n/tmp\n";
  for (int i = 1; i <= 20000; ++i)
    expected += std::to_string(i) + "\n";
  BOOST_TEST((r.out == expected));
  BOOST_TEST(r.err == "to-stderr\n");
}

BOOST_AUTO_TEST_CASE(stdin_arrives_byte_for_byte, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const std::string odd("\x00\x01\x02\xff\x00\x41", 6);
  auto r = ctl(d, {"exec", "-i", shared_sandbox(), "--", "od", "-An", "-tx1"}, {odd});
  BOOST_TEST(r.exit_code == 0, r);
  BOOST_TEST(r.out == " 00 01 02 ff 00 41\n", r);
  r = ctl(d, {"exec", "-i", shared_sandbox(), "--", "cat"}, {odd});
  BOOST_TEST((r.out == odd));

  std::string big(65537, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
  r = ctl(d, {"exec", "-i", shared_sandbox(), "--", "sh", "-c", "wc -c; cat >/dev/null"}, {big});
  BOOST_TEST(r.out == "65537\n", r);
  r = ctl(d, {"exec", "-i", shared_sandbox(), "--", "cat"}, {big});
  BOOST_TEST(r.out.size() == 65537u);
  BOOST_TEST((r.out == big));
  // Without -i the command's stdin is empty, whatever sandboxctl's is.
  r = ctl(d, {"exec", shared_sandbox(), "--", "wc", "-c"}, {"ignored"});
  BOOST_TEST(r.out == "0\n", r);
}

BOOST_AUTO_TEST_CASE(a_timeout_kills_the_command_within_two_seconds,
                     *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto& id = shared_sandbox();
  auto r = ctl(d, {"exec", "--timeout", "1s", id, "--", "sleep", "10"});
  BOOST_TEST(r.exit_code == 128 + 9, r);
  BOOST_TEST(r.seconds < 2.0, "took " << r.seconds << " s");
  BOOST_TEST(r.err.find("timed out after 1s; its processes were killed") != std::string::npos, r);
  // Gone: no `sleep 10` in the sandbox's cgroups, and none the sandbox can see.
  for (int pid : sandbox_processes(id))
    BOOST_TEST(process_line(pid).find("sleep 10") == std::string::npos, pid);
  auto ps = ctl(d, {"exec", id, "--", "sh", "-c", "ps -o args | grep -c '^sleep 10' || true"});
  BOOST_TEST(ps.out == "0\n", ps);
  auto j = ctl(d, {"--json", "exec", "--timeout", "1s", id, "--", "sleep", "10"});
  BOOST_TEST(j.doc()["timed_out"] == true);
  BOOST_TEST(j.doc()["signal"] == 9);
}

BOOST_AUTO_TEST_CASE(background_execs_are_listed_waited_for_and_killed,
                     *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto& id = shared_sandbox();
  const auto quick = ctl_ok(d, {"exec", "--background", id, "--", "sh", "-c", "sleep 1; exit 7"});
  const std::string quick_id = quick.substr(0, quick.size() - 1);
  const auto slow = json::parse(ctl_ok(d, {"--json", "exec", "-d", id, "--", "sleep", "300"}));
  const std::string slow_id = slow["exec_id"];
  BOOST_TEST(slow["argv"] == json({"sleep", "300"}));

  auto listed = ctl_ok(d, {"ps", id});
  BOOST_TEST(listed.find(slow_id) != std::string::npos, listed);
  BOOST_TEST(listed.find("sleep 300") != std::string::npos, listed);
  auto as_json = json::parse(ctl_ok(d, {"--json", "ps", id}));
  BOOST_TEST(as_json["execs"].size() >= 1u);

  auto waited = ctl(d, {"wait", id, quick_id});
  BOOST_TEST(waited.exit_code == 7, waited);
  BOOST_TEST(ctl_ok(d, {"kill", id, slow_id, "--signal", "KILL"}) ==
             "sent SIGKILL to exec " + slow_id + "\n");
  auto killed = ctl(d, {"--json", "wait", id, slow_id});
  BOOST_TEST(killed.exit_code == 137, killed);
  BOOST_TEST(killed.doc()["signal"] == 9);
  BOOST_TEST(ctl_ok(d, {"ps", id}).find(slow_id) == std::string::npos);
  // The default signal is TERM; --json says what was sent.
  const auto third = json::parse(ctl_ok(d, {"--json", "exec", "-d", id, "--", "sleep", "301"}));
  auto sent = json::parse(ctl_ok(d, {"--json", "kill", id, third["exec_id"]}));
  BOOST_TEST(sent["exec_id"] == third["exec_id"]);
  BOOST_TEST(sent["signal"] == 15);
  BOOST_TEST(ctl(d, {"wait", id, third["exec_id"]}).exit_code == 128 + 15);
  expect_error(ctl(d, {"exec", "-i", "-d", id, "--", "true"}), 200, "usage",
               "-i and --background do not go together");
}

BOOST_AUTO_TEST_CASE(create_env_reaches_every_exec_and_secrets_stay_out_of_the_log,
                     *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto id = create(
    d, {"--runtime", "crun", "--env", "PLAIN=visible", "--secret-env", "API_KEY=s3cr3t-value"});
  auto r = ctl(d, {"exec", id, "--", "sh", "-c", "echo $PLAIN $API_KEY"});
  BOOST_TEST(r.out == "visible s3cr3t-value\n", r);
  auto events = ctl_ok(d, {"--json", "events", id});
  BOOST_TEST(events.find("s3cr3t-value") == std::string::npos);
  BOOST_TEST(events.find("API_KEY (secret)") != std::string::npos);
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(a_90_s_command_without_a_timeout_completes, *utf::precondition(crun_can_run)) {
  auto& l = the_long_exec();
  int status = 0;
  BOOST_REQUIRE_EQUAL(::waitpid(l.pid, &status, 0), l.pid);
  const double took =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - l.started).count();
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0, read_text(l.out_path));
  BOOST_TEST(read_text(l.out_path) == "finished after 90 s\n");
  BOOST_TEST(took >= 90.0);
}

// Output reaches the terminal while the command still runs: the command prints a line, then
// waits for a file that the test writes only after it has seen that line.
BOOST_AUTO_TEST_CASE(output_arrives_while_the_command_runs, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto& id = shared_sandbox();
  const std::string out = d.dir().path() + "/streamed.out";
  ctl_options o;
  o.env["SANDBOXD_ADDR"] = d.address();
  o.env["SANDBOXD_TOKEN"] = d.token();
  ctl_result r;
  std::thread runner([&] {
    r = run_process("/bin/sh",
                    {"-c", sandboxctl_bin() + " exec " + id +
                             " -- sh -c 'echo first; while [ ! -e /tmp/go-streamed ]; do sleep "
                             "0.05; done; echo second' > " +
                             out},
                    o);
  });
  BOOST_TEST(eventually([&] { return read_text(out) == "first\n"; }, 60s), read_text(out));
  ctl_ok(d, {"write", id, "/tmp/go-streamed"}, {"go"});
  runner.join();
  BOOST_TEST(r.exit_code == 0, r);
  BOOST_TEST(read_text(out) == "first\nsecond\n");
  ctl_ok(d, {"rm", id, "/tmp/go-streamed"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(files)

BOOST_AUTO_TEST_CASE(write_read_ls_stat_mkdir_mv_rm, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "128"});
  std::string all;
  for (int i = 0; i < 256; ++i)
    all += static_cast<char>(i);
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "mkdir", "-p", id, "/workspace/a/b"}))["created"] ==
             "/workspace/a/b");
  ctl_ok(d, {"write", id, "/workspace/a/b/bytes.bin"}, {all});
  BOOST_TEST((ctl_ok(d, {"read", id, "/workspace/a/b/bytes.bin"}) == all));
  auto wrote = json::parse(
    ctl_ok(d, {"--json", "write", id, "/workspace/x.txt", "--mode", "600"}, {"hello\n"}));
  BOOST_TEST(wrote["size"] == 6);
  BOOST_TEST(wrote["mode"] == "0600");
  BOOST_TEST(wrote["sha256"] == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  auto read_json = json::parse(ctl_ok(d, {"--json", "read", id, "/workspace/a/b/bytes.bin"}));
  BOOST_TEST(read_json["size"] == 256);
  BOOST_TEST(read_json.contains("content_base64"));

  auto ls = json::parse(ctl_ok(d, {"--json", "ls", id, "/workspace"}));
  std::set<std::string> names;
  for (const auto& e : ls["entries"]) {
    names.insert(e["name"]);
    for (const char* f : {"name", "path", "type", "size", "mode", "mtime"})
      BOOST_TEST(e.contains(f), f);
  }
  BOOST_TEST((names == std::set<std::string>{"a", "x.txt"}));
  BOOST_TEST(ctl_ok(d, {"ls", id, "/workspace"}).find("a/") != std::string::npos);
  auto st = json::parse(ctl_ok(d, {"--json", "stat", id, "/workspace/x.txt"}));
  BOOST_TEST(st["type"] == "regular");
  BOOST_TEST(ctl_ok(d, {"stat", id, "/workspace/a"}).find("type:      directory") !=
             std::string::npos);

  auto moved = json::parse(ctl_ok(d, {"--json", "mv", id, "/workspace/x.txt", "/workspace/y.txt"}));
  BOOST_TEST(moved["to"] == "/workspace/y.txt");
  BOOST_TEST(ctl_ok(d, {"read", id, "/workspace/y.txt"}) == "hello\n");
  expect_error(ctl(d, {"read", id, "/workspace/x.txt"}), 201, "not_found", "x.txt");
  // A directory with something in it goes only with -r.
  auto not_recursive = ctl(d, {"rm", id, "/workspace/a"});
  BOOST_TEST((not_recursive.exit_code > 200 && not_recursive.exit_code <= 210), not_recursive);
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "stat", id, "/workspace/a/b/bytes.bin"}))["size"] ==
             256);
  BOOST_TEST(json::parse(ctl_ok(d, {"--json", "rm", "-r", id, "/workspace/a"}))["removed"] ==
             "/workspace/a");
  expect_error(ctl(d, {"stat", id, "/workspace/a"}), 201, "not_found", "/workspace/a");
  expect_error(ctl(d, {"ls", id, "/workspace/y.txt"}), 207, "not_a_directory", "y.txt");
  expect_error(ctl(d, {"read", id, "/workspace"}), 208, "is_a_directory", "/workspace");
  ctl_ok(d, {"delete", id});
}

BOOST_AUTO_TEST_CASE(cp_in_and_cp_out_copy_large_files_exactly, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto& id = shared_sandbox();
  const std::string local = d.dir().path() + "/big.bin", back = d.dir().path() + "/back.bin";
  {
    std::ofstream f(local, std::ios::binary);
    for (int i = 0; i < (3 << 20) + 17; ++i)
      f.put(static_cast<char>((i * 31) ^ (i >> 9)));
  }
  auto in = ctl(d, {"cp-in", local, id, "/workspace/big.bin"});
  BOOST_TEST(in.exit_code == 0, in);
  BOOST_TEST(in.err.empty(), in); // not a terminal: no progress bar
  auto out = ctl(d, {"--json", "cp-out", id, "/workspace/big.bin", back});
  BOOST_TEST(out.exit_code == 0, out);
  BOOST_TEST(out.doc()["size"] == (3 << 20) + 17);
  BOOST_TEST((read_text(back) == read_text(local)));
  BOOST_TEST(!std::filesystem::exists(back + ".sandboxctl-partial"));
  expect_error(ctl(d, {"cp-out", id, "/workspace/none", back}), 201, "not_found", "none");
  BOOST_TEST((read_text(back) == read_text(local))); // a failed copy left it as it was
}

BOOST_AUTO_TEST_CASE(a_memory_paused_sandbox_serves_reads_and_refuses_writes,
                     *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "128"});
  ctl_ok(d, {"write", id, "/workspace/kept.txt"}, {"kept"});
  ctl_ok(d, {"pause", id, "--mode", "memory"});
  BOOST_TEST(ctl_ok(d, {"read", id, "/workspace/kept.txt"}) == "kept");
  expect_error(ctl(d, {"write", id, "/workspace/new.txt"}, {"x"}), 202, "conflict", "");
  ctl_ok(d, {"resume", id});
  ctl_ok(d, {"pause", id, "--mode", "filesystem"});
  ctl_ok(d, {"write", id, "/workspace/while-paused.txt"}, {"offline"});
  BOOST_TEST(ctl_ok(d, {"read", id, "/workspace/while-paused.txt"}) == "offline");
  ctl_ok(d, {"delete", id});
}

// What scripts do to set a sandbox up: write --from a local file and from stdin, anywhere in the
// sandbox, parents made; the files survive a filesystem pause and are read while paused.
BOOST_AUTO_TEST_CASE(write_from_a_file_outside_the_workspace_survives_a_pause,
                     *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto id = create(d, {"--runtime", "crun", "--memory", "128"});
  const std::string local = d.dir().path() + "/marker.txt";
  { std::ofstream(local) << "marker from a file\n"; }
  auto w = ctl(d, {"--json", "write", id, "/usr/local/share/check/marker.txt", "--from", local});
  BOOST_TEST(w.exit_code == 0, w);
  BOOST_TEST(w.doc()["size"] == 19);
  ctl_ok(d, {"write", id, "/etc/check.txt"}, {"from stdin\n"});
  ctl_ok(d, {"pause", id, "--mode", "filesystem"});
  BOOST_TEST(ctl_ok(d, {"read", id, "/usr/local/share/check/marker.txt"}) ==
             "marker from a file\n");
  BOOST_TEST(ctl_ok(d, {"read", id, "/etc/check.txt"}) == "from stdin\n");
  ctl_ok(d, {"resume", id});
  BOOST_TEST(ctl_ok(d, {"exec", id, "--", "cat", "/usr/local/share/check/marker.txt",
                        "/etc/check.txt"}) == "marker from a file\nfrom stdin\n");
  expect_error(ctl(d, {"write", id, "/workspace/x", "--from", local + ".missing"}), 204,
               "invalid_argument", "marker.txt.missing");
  ctl_ok(d, {"delete", id});
}

// On a terminal cp-in and cp-out draw a progress bar on stderr (script(1) gives them one).
BOOST_AUTO_TEST_CASE(a_large_copy_shows_progress_on_a_terminal, *utf::precondition(crun_can_run)) {
  auto& d = shared();
  const auto& id = shared_sandbox();
  const std::string local = d.dir().path() + "/progress.bin";
  {
    std::ofstream f(local, std::ios::binary);
    f << std::string(9 << 20, 'p');
  }
  ctl_options o;
  o.env["SANDBOXD_ADDR"] = d.address();
  o.env["SANDBOXD_TOKEN"] = d.token();
  auto r = run_process(
    "/usr/bin/script",
    {"-qec", sandboxctl_bin() + " cp-in " + local + " " + id + " /workspace/progress.bin",
     "/dev/null"},
    o);
  BOOST_TEST(r.exit_code == 0, r);
  BOOST_TEST(r.out.find("] 100%") != std::string::npos, r);
  BOOST_TEST(r.out.find("\r") != std::string::npos, r);
  auto in = ctl(d, {"--json", "cp-in", local, id, "/workspace/progress2.bin"});
  BOOST_TEST(in.exit_code == 0, in);
  BOOST_TEST(in.err.empty(), in); // not a terminal: no bar
  BOOST_TEST(in.doc()["size"] == 9 << 20);
  ctl_ok(d, {"rm", id, "/workspace/progress.bin"});
  ctl_ok(d, {"rm", id, "/workspace/progress2.bin"});
}

BOOST_AUTO_TEST_SUITE_END()
