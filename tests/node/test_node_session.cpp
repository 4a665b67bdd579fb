// A session of every sandbox operation through one node, on real crun and runsc sandboxes
// (a runtime that cannot run here is skipped with the reason), on each log: file_log, and
// kafka_log on the real broker (one suite per log). Three sandboxes per session:
// - processes and files: exec with env, cwd, stdin bytes (NUL, invalid UTF-8), exit 42, a
//   missing binary, a timeout that ends the whole process tree, an exec without a timeout
//   that runs 90 s, output handed over while the process still runs, a background exec
//   listed, killed and waited for; make_dir, rename, recursive remove, bytes 0-255 and the
//   per-call size limit (limit passes, limit+1 is too_large);
// - the persistence recipe: markers in /workspace, /usr/local/share and /etc, a filesystem
//   pause, reads while paused, a write while paused, resume, a process sees all of it; a
//   memory pause keeps a background process, refuses a write with conflict, serves reads;
// - the disk limit: a process writing past it fails, write_file is resource_exhausted,
//   deleting files lets it write again.
// Then: an unsupported network policy is refused, no operation is left without its outcome
// event, the read models equal a rebuild from offset zero, the audit log verifies and each
// event has its audit row with its outcome.
//
// Each session has a node of its own (its log, its runtime, its schema). All sessions start
// when the first case runs, each with its first sandbox and that sandbox's 90 s exec, so the
// four 90 s waits overlap: the binary takes about the time of one wait and four sessions'
// operations, not four times a wait and its session (434 s as two binaries of two sessions).
#define BOOST_TEST_MODULE node_session
#include <boost/test/unit_test.hpp>

#include "tests/node/node_checks.hpp"
#include "tests/projections/postgres_installed.hpp"

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

using namespace sandboxd::test;
using ac::sandbox_status;
namespace cmd = sandboxd::actors::cmd;

BOOST_AUTO_TEST_SUITE(node_session, *utf::precondition(postgres_installed))

namespace {

const ev::runtime_kind runsc = ev::runtime_kind::runsc;
const ev::runtime_kind crun = ev::runtime_kind::crun;

// A script that prints /proc/<pid> of every process in the sandbox whose command line is
// `line` (its arguments each followed by one space).
std::string find_process(const std::string& line) {
  return "for f in /proc/[0-9]*/cmdline; do [ \"$(tr '\\000' ' ' < $f 2>/dev/null)\" = '" + line +
         "' ] && echo ${f%/cmdline}; done; true";
}

std::string failure_of(const std::optional<ev::error>& f) {
  return f ? ev::to_string(f->code) + ": " + f->message : "none";
}

struct session {
  nd::node& n;
  ev::runtime_kind kind;

  std::string create(ac::command c) {
    auto r = n.call("", std::move(c));
    BOOST_REQUIRE_MESSAGE(r.ok(), "create: " << failure_of(r.failure));
    BOOST_REQUIRE_MESSAGE(r.state.status == sandbox_status::running,
                          "create: " << r.state.sandbox_id << " is "
                                     << ac::to_string(r.state.status) << ": "
                                     << r.state.failure_reason);
    return r.state.sandbox_id;
  }
  ac::op_result<ev::file_op_finished> write(const std::string& id, const std::string& path,
                                            std::string content) {
    return wait_op<ev::file_op_finished>(
      [&](auto done) { n.plane().write_file(id, tester(), path, std::move(content), 0644, done); });
  }
  ac::op_result<std::string> read(const std::string& id, const std::string& path) {
    return wait_op<std::string>([&](auto done) { n.plane().read_file(id, tester(), path, done); });
  }
  ac::op_result<rt::file_info> stat(const std::string& id, const std::string& path) {
    return wait_op<rt::file_info>([&](auto done) { n.plane().stat(id, tester(), path, done); });
  }
  std::set<std::string> list(const std::string& id, const std::string& path) {
    auto r =
      wait_op<rt::dir_listing>([&](auto done) { n.plane().list_dir(id, tester(), path, done); });
    BOOST_REQUIRE_MESSAGE(r.ok(), "list " << path << ": " << failure_of(r.failure));
    std::set<std::string> names;
    for (const auto& e : r.value.entries)
      names.insert(e.name);
    return names;
  }
  std::string run(const std::string& id, const std::string& script) {
    ac::exec_request x;
    x.argv = {"/bin/sh", "-c", script};
    x.timeout = 60s;
    std::string out;
    auto r = exec_through(n, id, x, &out);
    BOOST_REQUIRE_MESSAGE(r.ok(), script << ": " << failure_of(r.failure));
    BOOST_REQUIRE_MESSAGE(r.value.exit_code == 0, script << ": exit " << r.value.exit_code);
    return out;
  }
  std::set<std::string> execs_in_flight(const std::string& id) {
    auto r = wait_op<std::vector<ev::exec_started>>(
      [&](auto done) { n.plane().list_execs(id, "t1", done); });
    BOOST_REQUIRE(r.ok());
    std::set<std::string> ids;
    for (const auto& x : r.value)
      ids.insert(x.exec_id);
    return ids;
  }
};

// The first sandbox of a session and its 90 s exec, started before the session's case runs.
struct ninety_exec {
  std::string sandbox_id;
  std::string exec_id;
  std::shared_ptr<std::string> out = std::make_shared<std::string>();
  std::chrono::steady_clock::time_point began;
  // Whether list_execs named it just after it started (checked by the session's case: by the
  // time the last session's case runs, its 90 s may be over).
  bool listed_while_running = false;
};

// A session made ready for its case: the node started, the first sandbox created (with the
// sandbox environment the exec checks below read) and its exec of `sleep 90` running, with
// no timeout: no hidden default may end it. No assertion here: it runs before any case, and
// its case reports `failure`.
struct started_session {
  ev::runtime_kind kind;
  test_log log;
  std::optional<std::string> failure; // why the session could not start
  std::unique_ptr<node_dir> dir;
  std::unique_ptr<nd::node> n;
  ninety_exec ninety;
};

void start_session(started_session& st) {
  try {
    st.dir = std::make_unique<node_dir>();
    st.n = std::make_unique<nd::node>(node_config_for(*st.dir, {st.kind}, false, st.log));
    st.n->start();
    auto c = create_command(st.kind);
    std::get<cmd::create>(c.body).spec.env = {{"SANDBOX_LEVEL", "yes", false, std::nullopt},
                                              {"SECRET_TOKEN", "tok-123", true, std::nullopt}};
    auto r = st.n->call("", std::move(c));
    if (!r.ok() || r.state.status != sandbox_status::running) {
      st.failure = "create: " + (r.ok() ? r.state.sandbox_id + " is " +
                                            std::string(ac::to_string(r.state.status)) + ": " +
                                            r.state.failure_reason
                                        : failure_of(r.failure));
      return;
    }
    st.ninety.sandbox_id = r.state.sandbox_id;
    ac::exec_request x;
    x.argv = {"/bin/sh", "-c", "sleep 90; echo ninety"};
    auto out = st.ninety.out;
    auto id = wait_op<std::string>([&](auto done) {
      st.n->plane().start_exec(
        st.ninety.sandbox_id, tester(), x,
        [out](rt::output_stream, std::string_view d) { *out += d; }, done);
    });
    if (!id.ok()) {
      st.failure = "the 90 s exec: " + failure_of(id.failure);
      return;
    }
    st.ninety.exec_id = id.value;
    st.ninety.began = std::chrono::steady_clock::now();
    auto listed = wait_op<std::vector<ev::exec_started>>(
      [&](auto done) { st.n->plane().list_execs(st.ninety.sandbox_id, "t1", done); });
    if (listed.ok())
      for (const auto& e : listed.value)
        st.ninety.listed_while_running |= e.exec_id == st.ninety.exec_id;
  } catch (const std::exception& e) {
    st.failure = e.what();
  }
}

// Every session this machine can run, started at once when the first case asks; each case
// stops its own, and what a failed case left is stopped after the last case.
std::optional<std::vector<started_session>> g_sessions;

std::vector<started_session>& sessions() {
  if (!g_sessions) {
    g_sessions.emplace();
    for (auto log : {test_log::file, test_log::kafka})
      for (auto kind : {crun, runsc})
        if (runtime_can_run{kind}(0))
          g_sessions->push_back(started_session{kind, log, std::nullopt, nullptr, nullptr, {}});
    for (auto& st : *g_sessions)
      start_session(st);
  }
  return *g_sessions;
}

struct stop_sessions {
  ~stop_sessions() { g_sessions.reset(); }
};

void processes_and_files(session& s, const ninety_exec& ninety) {
  auto& n = s.n;
  const auto id = ninety.sandbox_id;

  // env (the sandbox's and the exec's own), cwd, stdin bytes, exit code.
  ac::exec_request x;
  x.argv = {"/bin/sh", "-c",
            "echo $SANDBOX_LEVEL $SECRET_TOKEN $EXEC_VAR; pwd; od -An -tx1 | tr -d ' \n'; exit 42"};
  x.env = {{"EXEC_VAR", "from-exec", false, std::nullopt}};
  x.cwd = "/tmp";
  x.stdin_data = std::string("a\0\xff\xfe\xc3(", 6);
  std::string out;
  auto res = exec_through(n, id, x, &out);
  BOOST_REQUIRE_MESSAGE(res.ok(), failure_of(res.failure));
  BOOST_TEST(res.value.exit_code == 42);
  BOOST_TEST(out == "yes tok-123 from-exec\n/tmp\n6100fffec328");
  BOOST_TEST(res.value.stdout_bytes == out.size());

  x = {};
  x.argv = {"/no/such/binary"};
  res = exec_through(n, id, x);
  BOOST_REQUIRE(res.ok());
  BOOST_TEST(res.value.exit_code == 127);

  // A timeout ends the exec and every process it started.
  x = {};
  x.argv = {"/bin/sh", "-c", "sleep 6002 & sleep 6003"};
  x.timeout = 1s;
  res = exec_through(n, id, x);
  BOOST_REQUIRE(res.ok());
  BOOST_TEST(res.value.timed_out);
  BOOST_TEST(
    eventually(
      [&] {
        return s.run(id, find_process("sleep 6002 ") + "; " + find_process("sleep 6003 ")).empty();
      },
      10s),
    "a process of the timed-out exec outlived it");

  // Output reaches the caller while the process runs: the process waits for a file that
  // the test writes only after "first" arrived, and the result comes after all the output.
  {
    std::mutex mu;
    std::condition_variable cv;
    std::string streamed;
    bool finished = false, output_after_result = false;
    std::optional<ac::op_result<ev::exec_finished>> result;
    ac::exec_request w;
    w.argv = {"/bin/sh", "-c",
              "echo first; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo second"};
    w.timeout = 120s;
    n.plane().exec(
      id, tester(), w,
      [&](rt::output_stream, std::string_view d) {
        std::lock_guard l(mu);
        output_after_result = output_after_result || finished;
        streamed += d;
        cv.notify_all();
      },
      [&](ac::op_result<ev::exec_finished> r) {
        std::lock_guard l(mu);
        finished = true;
        result = std::move(r);
        cv.notify_all();
      });
    std::unique_lock l(mu);
    BOOST_REQUIRE(cv.wait_for(l, 60s, [&] { return streamed == "first\n" || finished; }));
    BOOST_REQUIRE_MESSAGE(!finished, "the exec ended before the test let it: " << streamed);
    l.unlock();
    BOOST_REQUIRE(s.write(id, "/workspace/go", "").ok());
    l.lock();
    BOOST_REQUIRE(cv.wait_for(l, 60s, [&] { return finished; }));
    BOOST_REQUIRE_MESSAGE(result->ok(), failure_of(result->failure));
    BOOST_TEST(streamed == "first\nsecond\n");
    BOOST_TEST(!output_after_result, "output arrived after the exec's result");
    BOOST_TEST(result->value.stdout_bytes == streamed.size());
  }

  // A background exec: its id at once, listed while it runs, killed, its result waited for.
  ac::exec_request bg;
  bg.argv = {"sleep", "6004"};
  auto started =
    wait_op<std::string>([&](auto done) { n.plane().start_exec(id, tester(), bg, nullptr, done); });
  BOOST_REQUIRE_MESSAGE(started.ok(), failure_of(started.failure));
  const auto bg_id = started.value;
  const auto listed = s.execs_in_flight(id);
  BOOST_TEST(listed.count(bg_id) == 1u);
  BOOST_TEST(ninety.listed_while_running, "the 90 s exec was not listed while it ran");
  BOOST_REQUIRE(eventually([&] { return !s.run(id, find_process("sleep 6004 ")).empty(); }));
  auto killed = wait_op<ev::exec_kill_requested>(
    [&](auto done) { n.plane().kill_exec(id, tester(), bg_id, SIGKILL, done); });
  BOOST_REQUIRE_MESSAGE(killed.ok(), failure_of(killed.failure));
  auto waited =
    wait_op<ev::exec_finished>([&](auto done) { n.plane().wait_exec(id, "t1", bg_id, done); });
  BOOST_REQUIRE_MESSAGE(waited.ok(), failure_of(waited.failure));
  BOOST_TEST(waited.value.signal == SIGKILL);
  BOOST_TEST(s.execs_in_flight(id).count(bg_id) == 0u);
  BOOST_TEST(s.run(id, find_process("sleep 6004 ")).empty(), "the killed exec still runs");

  // Files: make_dir with parents, rename, stat and list, remove (refused for a directory
  // with contents unless recursive).
  auto made = wait_op<ev::file_op_finished>(
    [&](auto done) { n.plane().make_dir(id, tester(), "/workspace/d/e", true, 0755, done); });
  BOOST_REQUIRE_MESSAGE(made.ok(), failure_of(made.failure));
  BOOST_REQUIRE(s.write(id, "/workspace/d/e/f", "x").ok());
  auto renamed = wait_op<ev::file_op_finished>(
    [&](auto done) { n.plane().rename_path(id, tester(), "/workspace/d", "/workspace/d2", done); });
  BOOST_REQUIRE_MESSAGE(renamed.ok(), failure_of(renamed.failure));
  BOOST_TEST(s.stat(id, "/workspace/d").failure->code == ev::errc::not_found);
  auto st = s.stat(id, "/workspace/d2/e/f");
  BOOST_REQUIRE(st.ok());
  BOOST_TEST(st.value.size == 1u);
  BOOST_TEST(s.list(id, "/workspace/d2/e") == std::set<std::string>{"f"});
  auto removed = wait_op<ev::file_op_finished>(
    [&](auto done) { n.plane().remove_path(id, tester(), "/workspace/d2", false, done); });
  BOOST_REQUIRE(!removed.ok());
  BOOST_TEST(s.stat(id, "/workspace/d2/e/f").ok(), "a refused remove removed something");
  removed = wait_op<ev::file_op_finished>(
    [&](auto done) { n.plane().remove_path(id, tester(), "/workspace/d2", true, done); });
  BOOST_REQUIRE_MESSAGE(removed.ok(), failure_of(removed.failure));
  BOOST_TEST(s.stat(id, "/workspace/d2").failure->code == ev::errc::not_found);
  BOOST_TEST(s.run(id, "ls /workspace/d2 2>&1 || true").find("No such file") != std::string::npos);

  // Bytes 0-255 round-trip, and a process sees them.
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes.push_back(static_cast<char>(i));
  auto w = s.write(id, "/workspace/b.bin", bytes);
  BOOST_REQUIRE_MESSAGE(w.ok(), failure_of(w.failure));
  BOOST_TEST(w.value.bytes == 256u);
  auto rd = s.read(id, "/workspace/b.bin");
  BOOST_REQUIRE(rd.ok());
  BOOST_TEST((rd.value == bytes));
  BOOST_TEST(s.run(id, "od -An -tx1 /workspace/b.bin | tr -d ' \n' | md5sum | cut -c1-32") ==
             s.run(id, "i=0; while [ $i -lt 256 ]; do printf '%02x' $i; i=$((i+1)); done | "
                       "md5sum | cut -c1-32"));

  // The per-call limit (max_file_bytes): the limit passes, one byte more is too_large.
  const std::size_t limit = rt::limits{}.max_file_bytes;
  w = s.write(id, "/workspace/limit.bin", std::string(limit, 'L'));
  BOOST_REQUIRE_MESSAGE(w.ok(), failure_of(w.failure));
  BOOST_TEST(w.value.bytes == limit);
  rd = s.read(id, "/workspace/limit.bin");
  BOOST_REQUIRE(rd.ok());
  BOOST_TEST(rd.value.size() == limit);
  w = s.write(id, "/workspace/over.bin", std::string(limit + 1, 'L'));
  BOOST_REQUIRE(!w.ok());
  BOOST_TEST(w.failure->code == ev::errc::too_large);
  BOOST_TEST(s.stat(id, "/workspace/over.bin").failure->code == ev::errc::not_found);
  BOOST_TEST(s.run(id, "rm /workspace/limit.bin; echo ok") == "ok\n");
}

// The 90 s exec ran to its end (by now the rest of the session has run beside it), and the
// secret of the sandbox's environment is nowhere in its log.
void ninety_ran_to_its_end(session& s, const ninety_exec& ninety) {
  auto& n = s.n;
  const auto& id = ninety.sandbox_id;
  auto ninety_done = wait_op<ev::exec_finished>(
    [&](auto done) { n.plane().wait_exec(id, "t1", ninety.exec_id, done); });
  BOOST_REQUIRE_MESSAGE(ninety_done.ok(), failure_of(ninety_done.failure));
  BOOST_TEST(ninety_done.value.exit_code == 0);
  BOOST_TEST(!ninety_done.value.timed_out);
  BOOST_TEST(*ninety.out == "ninety\n");
  BOOST_TEST((std::chrono::steady_clock::now() - ninety.began >= 89s));
  BOOST_TEST((ninety_done.value.duration >= 89s));

  for (const auto& e : events_of(n.log(), id))
    BOOST_TEST(ev::encode(e).find("tok-123") == std::string::npos, "the secret is in the log");
  BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
}

// Markers in /workspace, /usr/local/share and /etc outlive a filesystem pause, are read
// while paused, a write while paused lands, and after resume a process sees all of it. A
// memory pause keeps a process, refuses a change with conflict and serves reads.
void persistence(session& s) {
  auto& n = s.n;
  const auto id = s.create(create_command(s.kind));
  s.run(id, "echo w > /workspace/m1; mkdir -p /usr/local/share/sbx; echo u > "
            "/usr/local/share/sbx/m2; echo e > /etc/m3");
  auto r = n.call(id, user_command(cmd::pause{ev::pause_mode::filesystem}));
  BOOST_REQUIRE_MESSAGE(r.ok(), failure_of(r.failure));
  BOOST_TEST(n.driver(s.kind)->inspect(id)->status == rt::sandbox_status::paused_filesystem);
  BOOST_TEST(s.read(id, "/workspace/m1").value == "w\n");
  BOOST_TEST(s.read(id, "/usr/local/share/sbx/m2").value == "u\n");
  BOOST_TEST(s.read(id, "/etc/m3").value == "e\n");
  BOOST_TEST(s.list(id, "/usr/local/share/sbx") == std::set<std::string>{"m2"});
  BOOST_TEST(s.stat(id, "/etc/m3").value.size == 2u);
  auto w = s.write(id, "/workspace/offline", "o\n");
  BOOST_REQUIRE_MESSAGE(w.ok(), "a write while filesystem-paused: " << failure_of(w.failure));
  ac::exec_request x;
  x.argv = {"true"};
  auto refused = exec_through(n, id, x);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.failure->code == ev::errc::conflict);
  r = n.call(id, user_command(cmd::resume{}));
  BOOST_REQUIRE_MESSAGE(r.ok(), failure_of(r.failure));
  BOOST_TEST(s.run(id, "cat /workspace/m1 /usr/local/share/sbx/m2 /etc/m3 /workspace/offline") ==
             "w\nu\ne\no\n");

  s.run(id, "sleep 6001 >/dev/null 2>&1 &");
  const auto before = s.run(id, find_process("sleep 6001 "));
  BOOST_REQUIRE(!before.empty());
  r = n.call(id, user_command(cmd::pause{ev::pause_mode::memory}));
  BOOST_REQUIRE_MESSAGE(r.ok(), failure_of(r.failure));
  BOOST_TEST(n.driver(s.kind)->inspect(id)->status == rt::sandbox_status::paused_memory);
  w = s.write(id, "/workspace/m1", "changed");
  BOOST_REQUIRE(!w.ok());
  BOOST_TEST(w.failure->code == ev::errc::conflict);
  auto made = wait_op<ev::file_op_finished>(
    [&](auto done) { n.plane().make_dir(id, tester(), "/workspace/no", false, 0755, done); });
  BOOST_TEST((!made.ok() && made.failure->code == ev::errc::conflict));
  BOOST_TEST(s.read(id, "/workspace/m1").value == "w\n");
  BOOST_TEST(s.list(id, "/workspace").count("offline") == 1u);
  BOOST_TEST(s.stat(id, "/etc/m3").ok());
  r = n.call(id, user_command(cmd::resume{}));
  BOOST_REQUIRE_MESSAGE(r.ok(), failure_of(r.failure));
  BOOST_TEST(s.run(id, find_process("sleep 6001 ")) == before, "the process did not survive");
  BOOST_TEST(s.run(id, "cat /workspace/m1; ls /workspace/no 2>/dev/null; true") == "w\n");
  BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
}

// A writable layer of 16 MiB: a process cannot write past it, write_file is
// resource_exhausted, and deleting files makes room again.
void disk_limit(session& s) {
  auto& n = s.n;
  auto c = create_command(s.kind);
  std::get<cmd::create>(c.body).spec.limits.disk_mib = 16;
  const auto id = s.create(c);
  ac::exec_request x;
  x.argv = {"/bin/sh", "-c", "dd if=/dev/zero of=/workspace/big bs=1M count=32 2>&1"};
  x.timeout = 60s;
  std::string out;
  auto res = exec_through(n, id, x, &out);
  BOOST_REQUIRE(res.ok());
  BOOST_TEST(res.value.exit_code != 0, "32 MiB fit in a 16 MiB layer: " << out);
  auto w = s.write(id, "/workspace/more", std::string(20u << 20, 'x'));
  BOOST_REQUIRE(!w.ok());
  BOOST_TEST(w.failure->code == ev::errc::resource_exhausted);
  s.run(id, "rm -f /workspace/big /workspace/more; sync");
  w = s.write(id, "/workspace/after", std::string(1u << 20, 'y'));
  BOOST_TEST(w.ok(), "no write after deleting files: " << failure_of(w.failure));
  BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
}

void whole_session(test_log log, ev::runtime_kind kind) {
  auto& all = sessions();
  auto it = std::find_if(all.begin(), all.end(),
                         [&](const auto& st) { return st.log == log && st.kind == kind; });
  BOOST_REQUIRE(it != all.end());
  BOOST_REQUIRE_MESSAGE(!it->failure, "the session did not start: " << *it->failure);
  auto& n = *it->n;
  session s{n, kind};
  std::vector<std::string> ids;
  processes_and_files(s, it->ninety);
  persistence(s);
  disk_limit(s);

  // A network policy the node cannot enforce is refused, naming the mode that works.
  auto full = create_command(kind);
  std::get<cmd::create>(full.body).spec.network.mode = ev::network_mode::full;
  auto refused = n.call("", full);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.failure->code == ev::errc::invalid_argument);
  BOOST_TEST(refused.failure->message.find("none") != std::string::npos, refused.failure->message);
  ninety_ran_to_its_end(s, it->ninety);

  // Every sandbox of the session: each operation has its outcome event.
  n.catch_up();
  pqxx::connection conn(n.conninfo());
  pqxx::work tx(conn);
  for (const auto& r :
       tx.exec("SELECT DISTINCT sandbox_id FROM " + tx.quote_name(n.schema()) + ".audit_log"))
    if (std::find(ids.begin(), ids.end(), r[0].as<std::string>()) == ids.end())
      ids.push_back(r[0].as<std::string>());
  tx.commit();
  BOOST_TEST(ids.size() == 3u, "the three sandboxes of the session are in the audit log");
  for (const auto& id : ids)
    for (const auto& open : outcomes_missing(events_of(n.log(), id)))
      BOOST_ERROR(id << ": " << open << " has no outcome event");
  check_read_models(n, ids);
  n.stop();
  it->n.reset(); // its sandboxes are gone: the node's memory and directory go now
  it->dir.reset();
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(stop_sessions);

BOOST_AUTO_TEST_SUITE(file_log)

BOOST_AUTO_TEST_CASE(every_operation_through_the_node_on_crun,
                     *utf::precondition(runtime_can_run{crun})) {
  whole_session(test_log::file, crun);
}

BOOST_AUTO_TEST_CASE(every_operation_through_the_node_on_runsc,
                     *utf::precondition(runtime_can_run{runsc})) {
  whole_session(test_log::file, runsc);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kafka_log)

BOOST_AUTO_TEST_CASE(every_operation_through_the_node_on_crun,
                     *utf::precondition(runtime_can_run{crun})) {
  whole_session(test_log::kafka, crun);
}

BOOST_AUTO_TEST_CASE(every_operation_through_the_node_on_runsc,
                     *utf::precondition(runtime_can_run{runsc})) {
  whole_session(test_log::kafka, runsc);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
