// One node end to end, with real parts: the event log under test (file_log, or with
// SANDBOXD_NODE_LOG=kafka kafka_log on the real broker: one binary, two ctest entries), PostgreSQL
// (embedded, or a schema on the binary's private server), real crun and runsc sandboxes (a case
// whose runtime cannot run here is skipped with the reason), the control plane and the projectors
// running together in this process.
#define BOOST_TEST_MODULE node
#include <boost/test/unit_test.hpp>

#include "node/node.hpp"
#include "projections/billing_report.hpp"
#include "tests/node/node_checks.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_seed.hpp"

#include <prometheus/metric_family.h>

#include <csignal>
#include <fcntl.h>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sys/wait.h>

using namespace sandboxd::test;
using ac::sandbox_status;
namespace cmd = sandboxd::actors::cmd;

// Every case needs PostgreSQL 15 (embedded, or the binary's private server).
BOOST_AUTO_TEST_SUITE(node_end_to_end, *utf::precondition(postgres_installed))

namespace {

ev::runtime_kind runsc = ev::runtime_kind::runsc;
ev::runtime_kind crun = ev::runtime_kind::crun;
ev::runtime_kind hollow = ev::runtime_kind::hollow;

// Starts a background process the tests look for by its command line, "sleep 6001".
const std::vector<std::string> k_background{"/bin/sh", "-c", "sleep 6001 >/dev/null 2>&1 &"};
// Prints /proc/<pid> of every "sleep 6001" in the sandbox (nothing when there is none).
const std::vector<std::string> k_find_background{
  "/bin/sh", "-c",
  "for f in /proc/[0-9]*/cmdline; do [ \"$(tr '\\000' ' ' < $f)\" = 'sleep 6001 ' ] && "
  "echo ${f%/cmdline}; done; true"};

cmd::exec exec_of(const std::string& exec_id, std::vector<std::string> argv) {
  cmd::exec x;
  x.exec_id = exec_id;
  x.argv = std::move(argv);
  x.working_directory = "/";
  x.timeout = 30s;
  return x;
}

std::string merged_of(nd::node& n, ev::runtime_kind kind, const std::string& id) {
  return n.runtime_dir(kind) + "/sandboxes/" + id + "/merged";
}

bool mounted(const std::string& point) {
  for (const auto& m : mounts_under(point))
    if (m == point)
      return true;
  return false;
}

// Create, exec, both pauses, resume, delete of one sandbox on `kind`, through the node.
void lifecycle(ev::runtime_kind kind) {
  node_dir dir;
  nd::node n(node_config_for(dir, {kind}, false));
  n.start();
  BOOST_TEST(n.default_runtime() == kind);

  auto r = n.call("", create_command(kind));
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
  const std::string id = r.state.sandbox_id;
  BOOST_TEST(r.state.status == sandbox_status::running);
  BOOST_TEST(n.driver(kind)->inspect(id)->status == rt::sandbox_status::running);
  BOOST_TEST(!sandbox_processes(id).empty(), "no process in the running sandbox's cgroups");

  // Exec through the actor: the program really ran (its outcome is in the log).
  r = n.call(
    id, user_command(exec_of("e1", {"/bin/sh", "-c", "echo hi > /workspace/m; cat /workspace/m"})),
    ac::reply_when::durable);
  BOOST_REQUIRE(r.ok());
  auto e1 = exec_outcome(n.log(), id, "e1");
  BOOST_REQUIRE(e1);
  BOOST_TEST(e1->exit_code == 0);
  BOOST_TEST(e1->stdout_bytes == 3u);
  r = n.call(id, user_command(exec_of("e2", k_background)), ac::reply_when::durable);
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE(exec_outcome(n.log(), id, "e2"));
  BOOST_TEST(!run_in(n, kind, id, k_find_background).stdout_data.empty());

  // Filesystem pause: processes end, the layer is kept and unmounted.
  r = n.call(id, user_command(cmd::pause{ev::pause_mode::filesystem}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::paused);
  BOOST_TEST(n.driver(kind)->inspect(id)->status == rt::sandbox_status::paused_filesystem);
  BOOST_TEST(!mounted(merged_of(n, kind, id)));
  BOOST_TEST(sandbox_processes(id).empty(), "processes outlived a filesystem pause");
  r = n.call(id, user_command(exec_of("e3", {"true"})));
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failure->code == ev::errc::conflict);

  r = n.call(id, user_command(cmd::resume{}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::running);
  BOOST_TEST(n.driver(kind)->read_file(id, "/workspace/m").value() == "hi\n");
  BOOST_TEST(run_in(n, kind, id, k_find_background).stdout_data == "",
             "a process outlived a filesystem pause");

  // Memory pause: the process state is kept.
  BOOST_REQUIRE(
    n.call(id, user_command(exec_of("e4", k_background)), ac::reply_when::durable).ok());
  BOOST_REQUIRE(exec_outcome(n.log(), id, "e4"));
  const auto before = run_in(n, kind, id, k_find_background);
  BOOST_REQUIRE(!before.stdout_data.empty());
  r = n.call(id, user_command(cmd::pause{ev::pause_mode::memory}));
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
  BOOST_TEST(r.state.status == sandbox_status::paused);
  BOOST_TEST(r.state.pause_mode == ev::pause_mode::memory);
  BOOST_TEST(n.driver(kind)->inspect(id)->status == rt::sandbox_status::paused_memory);
  r = n.call(id, user_command(cmd::resume{}));
  BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
  BOOST_TEST(r.state.status == sandbox_status::running);
  BOOST_TEST(run_in(n, kind, id, k_find_background).stdout_data == before.stdout_data);

  r = n.call(id, user_command(cmd::remove{}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::deleted);
  BOOST_TEST(n.driver(kind)->inspect(id).code() == rt::errc::not_found);

  check_read_models(n, {id});
  n.stop();
}

} // namespace

BOOST_AUTO_TEST_CASE(lifecycle_through_the_node_on_crun,
                     *utf::precondition(runtime_can_run{crun})) {
  lifecycle(crun);
}

BOOST_AUTO_TEST_CASE(lifecycle_through_the_node_on_runsc,
                     *utf::precondition(runtime_can_run{runsc})) {
  lifecycle(runsc);
}

namespace {

// Stops a node, then checks that nothing of `kind`'s running sandboxes runs or is mounted
// any more and that the embedded PostgreSQL is gone.
void check_stopped_clean(nd::node& n, ev::runtime_kind kind, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    BOOST_TEST(!mounted(merged_of(n, kind, id)), id << " is still mounted after stop");
    BOOST_TEST(sandbox_processes(id).empty(), id << " still has processes after stop");
  }
  if (kind == runsc)
    BOOST_TEST(processes_under(n.runtime_dir(kind)).empty(), "runsc processes left after stop");
  BOOST_TEST(processes_under(n.data_dir() + "/postgres").empty(),
             "the embedded PostgreSQL still runs after stop");
}

// A node stopped and started again on its data directory recovers every sandbox: states,
// files, and the processes of a memory-paused one.
void restart_recovers(ev::runtime_kind kind) {
  node_dir dir;
  const auto cfg = node_config_for(dir, {kind}, true);
  std::string running_id, fs_id, mem_id, deleted_id, mem_pid;
  std::map<std::string, ac::sandbox_state> before;
  {
    nd::node n(cfg);
    n.start();
    auto make = [&] {
      auto r = n.call("", create_command(kind));
      BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
      const auto id = r.state.sandbox_id;
      BOOST_REQUIRE(n.driver(kind)->write_file(id, "/workspace/marker", id, 0644).ok());
      return id;
    };
    running_id = make();
    fs_id = make();
    mem_id = make();
    deleted_id = make();
    for (const auto& id : {running_id, mem_id})
      BOOST_REQUIRE_EQUAL(run_in(n, kind, id, k_background).exit_code, 0);
    mem_pid = run_in(n, kind, mem_id, k_find_background).stdout_data;
    BOOST_REQUIRE(!mem_pid.empty());
    BOOST_REQUIRE(n.call(fs_id, user_command(cmd::pause{ev::pause_mode::filesystem})).ok());
    BOOST_REQUIRE(n.call(mem_id, user_command(cmd::pause{ev::pause_mode::memory})).ok());
    BOOST_REQUIRE(n.call(deleted_id, user_command(cmd::remove{})).ok());
    for (const auto& id : {running_id, fs_id, mem_id, deleted_id})
      before[id] = n.get(id, "t1").state;
    BOOST_TEST(n.driver(kind)->inspect(running_id)->status == rt::sandbox_status::running);
    BOOST_REQUIRE(!sandbox_processes(running_id).empty());
    n.stop();
    check_stopped_clean(n, kind, {running_id, fs_id});
    BOOST_TEST(std::filesystem::exists(cfg.data_dir + "/quiesced"));
  }
  {
    nd::node n(cfg);
    n.start();
    BOOST_TEST(n.recovery().sandboxes == 4u);
    BOOST_TEST(!std::filesystem::exists(cfg.data_dir + "/quiesced"));
    for (const auto& [id, s] : before) {
      const auto now = n.get(id, "t1");
      BOOST_REQUIRE(now.ok());
      BOOST_TEST(now.state.status == s.status, id);
      BOOST_TEST(now.state.sequence == s.sequence, id);
      BOOST_TEST(now.state.pause_mode == s.pause_mode, id);
    }
    // The running sandbox runs again, on its layer.
    BOOST_TEST(n.driver(kind)->inspect(running_id)->status == rt::sandbox_status::running);
    BOOST_TEST(run_in(n, kind, running_id, {"cat", "/workspace/marker"}).stdout_data == running_id);
    auto r = n.call(fs_id, user_command(cmd::resume{}));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
    BOOST_TEST(run_in(n, kind, fs_id, {"cat", "/workspace/marker"}).stdout_data == fs_id);
    // The memory-paused one kept its process across the restart.
    r = n.call(mem_id, user_command(cmd::resume{}));
    BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
    BOOST_TEST(run_in(n, kind, mem_id, k_find_background).stdout_data == mem_pid);
    for (const auto& id : {running_id, fs_id, mem_id})
      BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
    check_read_models(n, {running_id, fs_id, mem_id, deleted_id});
    n.stop();
  }
  for (int pid : processes_under(dir.data()))
    BOOST_ERROR("process " << pid << " left: " << process_line(pid));
  BOOST_TEST(mounts_under(dir.path()).empty());
}

} // namespace

BOOST_AUTO_TEST_CASE(restarted_node_recovers_every_sandbox_on_crun,
                     *utf::precondition(runtime_can_run{crun})) {
  restart_recovers(crun);
}

BOOST_AUTO_TEST_CASE(restarted_node_recovers_every_sandbox_on_runsc,
                     *utf::precondition(runtime_can_run{runsc})) {
  restart_recovers(runsc);
}

namespace {

// Sandboxes whose runtime is changed behind the node's back while it runs, then a restart:
// recovery records each disagreement with a `failed` event saying what it found, and leaves
// the sandbox the runtime agrees with alone.
void recovery_reconciles_the_runtime(ev::runtime_kind kind) {
  node_dir dir;
  const auto cfg = node_config_for(dir, {kind}, false);
  std::string agrees, gone, paused_but_running, memory_gone;
  {
    nd::node n(cfg);
    n.start();
    auto make = [&] {
      auto r = n.call("", create_command(kind));
      BOOST_REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.failure->message));
      return r.state.sandbox_id;
    };
    agrees = make();
    gone = make();
    paused_but_running = make();
    memory_gone = make();
    BOOST_REQUIRE(
      n.call(paused_but_running, user_command(cmd::pause{ev::pause_mode::filesystem})).ok());
    BOOST_REQUIRE(n.call(memory_gone, user_command(cmd::pause{ev::pause_mode::memory})).ok());
    auto* d = n.driver(kind);
    BOOST_REQUIRE(d->remove(gone).ok());
    BOOST_REQUIRE(d->resume(paused_but_running).ok());
    BOOST_REQUIRE(d->remove(memory_gone).ok());
    n.stop();
  }
  nd::node n(cfg);
  n.start();
  const auto& rec = n.recovery();
  BOOST_TEST((std::set<std::string>(rec.disagreed.begin(), rec.disagreed.end()) ==
              std::set<std::string>{gone, paused_but_running, memory_gone}));
  BOOST_TEST(n.get(agrees, "t1").state.status == sandbox_status::running);
  BOOST_TEST(n.driver(kind)->inspect(agrees)->status == rt::sandbox_status::running);
  const std::map<std::string, std::string> found{
    {gone, "no runtime sandbox"},
    {paused_but_running, "running where the log says paused (filesystem)"},
    {memory_gone, "no runtime sandbox"}};
  for (const auto& [id, what] : found) {
    BOOST_TEST(n.get(id, "t1").state.status == sandbox_status::failed, id);
    const auto events = events_of(n.log(), id);
    const auto* f = std::get_if<ev::failed>(&events.back().body);
    BOOST_REQUIRE_MESSAGE(f, id << ": the last event is " << ev::type_name(events.back().body));
    BOOST_TEST((f->step == ev::runtime_step::running));
    BOOST_TEST(f->reason.find(what) != std::string::npos, id << ": " << f->reason);
  }
  // A failed sandbox is deleted as usual, whatever the runtime still holds of it.
  for (const auto& id : {agrees, gone, paused_but_running, memory_gone})
    BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
  BOOST_TEST(n.driver(kind)->list()->empty());
  check_read_models(n, {agrees, gone, paused_but_running, memory_gone});
  n.stop();
}

} // namespace

BOOST_AUTO_TEST_CASE(recovery_records_what_the_hollow_runtime_disagrees_with) {
  recovery_reconciles_the_runtime(hollow);
}

BOOST_AUTO_TEST_CASE(recovery_records_what_the_crun_runtime_disagrees_with,
                     *utf::precondition(runtime_can_run{crun})) {
  recovery_reconciles_the_runtime(crun);
}

BOOST_AUTO_TEST_CASE(a_node_holds_runsc_and_crun_at_once,
                     *utf::precondition(runtime_can_run{crun}) *
                       utf::precondition(runtime_can_run{runsc})) {
  node_dir dir;
  auto cfg = node_config_for(dir, {crun, runsc}, false);
  nd::node n(cfg);
  n.start();
  BOOST_TEST(n.runtimes().size() == 2u);
  BOOST_TEST(n.default_runtime() == runsc);
  // created.runtime chooses the driver.
  auto r = n.call("", create_command(runsc));
  BOOST_REQUIRE(r.ok());
  const auto id = r.state.sandbox_id;
  BOOST_TEST(n.driver(runsc)->inspect(id)->status == rt::sandbox_status::running);
  BOOST_TEST(n.driver(crun)->inspect(id).code() == rt::errc::not_found);
  auto on_crun = n.call("", create_command(crun));
  BOOST_REQUIRE_MESSAGE(on_crun.ok(), on_crun.failure->message);
  const auto crun_id = on_crun.state.sandbox_id;
  BOOST_TEST(n.driver(crun)->inspect(crun_id)->status == rt::sandbox_status::running);
  BOOST_TEST(n.driver(runsc)->inspect(crun_id).code() == rt::errc::not_found);
  for (const auto& sid : {id, crun_id}) {
    auto p = std::make_shared<std::promise<ac::op_result<ev::exec_finished>>>();
    std::string out;
    ac::exec_request x;
    x.argv = {"echo", sid};
    n.plane().exec(
      sid, ac::caller{"t1", "alice", "both"}, x,
      [&out](rt::output_stream, std::string_view d) { out += d; },
      [p](ac::op_result<ev::exec_finished> res) { p->set_value(std::move(res)); });
    auto res = p->get_future().get();
    BOOST_REQUIRE_MESSAGE(res.ok(), res.failure->message);
    BOOST_TEST(out == sid + "\n", "exec through the node reaches the sandbox's own runtime");
  }
  auto full = create_command(crun);
  std::get<cmd::create>(full.body).spec.network.mode = ev::network_mode::full;
  auto refused = n.call("", full);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST((refused.failure->code == ev::errc::invalid_argument));
  BOOST_REQUIRE(n.call(crun_id, user_command(cmd::remove{})).ok());
  // Both drivers run sandboxes side by side, each in its own directory.
  rt::create_request c;
  c.id = "side-by-side";
  BOOST_REQUIRE(n.driver(crun)->create(c).ok());
  BOOST_REQUIRE(n.driver(crun)->start(c.id).ok());
  BOOST_TEST(run_in(n, crun, c.id, {"echo", "crun"}).stdout_data == "crun\n");
  BOOST_TEST(run_in(n, runsc, id, {"echo", "runsc"}).stdout_data == "runsc\n");
  BOOST_TEST(n.driver(runsc)->inspect(c.id).code() == rt::errc::not_found);
  BOOST_REQUIRE(n.driver(crun)->remove(c.id).ok());
  BOOST_REQUIRE(n.call(id, user_command(cmd::remove{})).ok());
  n.stop();
}

namespace {

class manual_clock {
public:
  ev::time_point now() const { return ev::time_point(ev::nanoseconds(ns_.load())); }
  void advance(ev::nanoseconds d) { ns_ += d.count(); }
  ac::clock_fn fn() {
    return [this] { return now(); };
  }

private:
  // 2027-01-15T08:00:00Z: a whole hour, as a bill's period must start on one.
  std::atomic<std::int64_t> ns_{std::int64_t{1'800'000'000} * 1'000'000'000};
};

std::int64_t ms_of(ev::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

} // namespace

// docs/billing.md: 4 GiB running 10 hours = $0.60; its 20 GiB writable layer kept 730 hours,
// from creation through a pause of 720 hours to deletion = $0.40; the bill is exactly $1.00,
// each line naming its events. The layer is a sparse file of 20 GiB apparent size planted in
// the hollow sandbox's layer directory right after the create: usage() counts file sizes, so
// the pause and the delete report 20 GiB without 20 GiB of disk.
BOOST_AUTO_TEST_CASE(published_billing_example_through_commands_bills_one_dollar) {
  node_dir dir;
  manual_clock clock;
  auto cfg = node_config_for(dir, {hollow}, false);
  cfg.plane.clock = clock.fn();
  cfg.plane.storage_sample_interval = std::chrono::hours(24 * 365);
  nd::node n(cfg);
  n.start();
  const auto t0 = clock.now();
  auto r = n.call("", create_command(hollow, 4096));
  BOOST_REQUIRE(r.ok());
  const auto id = r.state.sandbox_id;
  BOOST_TEST(r.state.status == sandbox_status::running);

  const std::uint64_t layer = std::uint64_t{20} << 30;
  const std::string file =
    n.runtime_dir(hollow) + "/sandboxes/" + id + "/upper/workspace/layer.img";
  std::filesystem::create_directories(std::filesystem::path(file).parent_path());
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT, 0644);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE_EQUAL(::ftruncate(fd, static_cast<off_t>(layer)), 0);
  ::close(fd);
  clock.advance(10h);
  r = n.call(id, user_command(cmd::pause{ev::pause_mode::filesystem}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.writable_layer_bytes == layer);

  clock.advance(720h);
  r = n.call(id, user_command(cmd::remove{}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::deleted);
  n.catch_up();

  pqxx::connection c(n.conninfo());
  pqxx::work tx(c);
  tx.exec("SET search_path TO " + tx.quote_name(n.schema()));
  const auto bill = proj::billing_report(tx, "t1", ms_of(t0), ms_of(clock.now()));
  BOOST_REQUIRE(bill.value);
  BOOST_REQUIRE_EQUAL(bill.value->lines.size(), 1u);
  const auto& line = bill.value->lines[0];
  BOOST_TEST(line.sandbox_id == id);
  BOOST_TEST(line.compute_micro_usd == 600'000);
  BOOST_TEST(line.storage_micro_usd == 400'000);
  BOOST_TEST(bill.value->total_micro_usd == 1'000'000);
  // Each event id names an event of this sandbox in the log: the compute interval's
  // started and pause_requested, the storage intervals' created, paused and deleted.
  std::map<std::string, std::string> types;
  for (const auto& e : events_of(n.log(), id))
    types[e.event_id] = std::string(ev::type_name(e.body));
  std::multiset<std::string> named;
  for (const auto& eid : line.event_ids) {
    BOOST_TEST(types.count(eid) == 1u, eid << " is not an event of " << id);
    named.insert(types[eid]);
  }
  BOOST_TEST(named.count("started") == 1u);
  BOOST_TEST(named.count("pause_requested") == 1u);
  BOOST_TEST(named.count("paused") + named.count("storage_sampled") >= 1u);
  BOOST_TEST(named.count("created") == 1u);
  BOOST_TEST(named.count("deleted") == 1u);
  for (const auto& e : events_of(n.log(), id))
    if (const auto* d = std::get_if<ev::deleted>(&e.body))
      BOOST_TEST(d->writable_layer_bytes == layer, "the delete measured the layer");
  n.stop();
}

BOOST_AUTO_TEST_CASE(metrics_move_with_commands) {
  node_dir dir;
  nd::node n(node_config_for(dir, {hollow}, false));
  n.start();
  const auto at_start = n.probe().Collect();
  BOOST_TEST(metric(at_start, "sandboxd_events_appended_total") == 0);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = n.call("", create_command(hollow));
    BOOST_REQUIRE(r.ok());
    ids.push_back(r.state.sandbox_id);
  }
  BOOST_REQUIRE(n.call(ids[1], user_command(cmd::pause{ev::pause_mode::filesystem})).ok());
  BOOST_REQUIRE(n.call(ids[2], user_command(cmd::remove{})).ok());
  n.catch_up();
  const auto m = n.probe().Collect();
  std::int64_t records = 0;
  for (std::int32_t p = 0; p < n.log().partitions(); ++p)
    records += n.log().end_offset(p).offset;
  BOOST_TEST(metric(m, "sandboxd_events_appended_total") == static_cast<double>(records));
  BOOST_TEST(metric(m, "sandboxd_log_append_seconds") >= 1);
  BOOST_TEST(metric(m, "sandboxd_log_appends_total", {{"outcome", "failed"}}) == 0);
  BOOST_TEST(
    metric(m, "sandboxd_driver_call_seconds", {{"runtime", "hollow"}, {"call", "create"}}) == 3);
  BOOST_TEST(
    metric(m, "sandboxd_driver_call_seconds", {{"runtime", "hollow"}, {"call", "pause"}}) == 1);
  BOOST_TEST(metric(m, "sandboxd_sandboxes", {{"state", "running"}, {"runtime", "hollow"}}) == 1);
  BOOST_TEST(metric(m, "sandboxd_sandboxes", {{"state", "paused"}}) == 1);
  BOOST_TEST(metric(m, "sandboxd_sandboxes", {{"state", "deleted"}}) == 1);
  for (std::int32_t p = 0; p < n.log().partitions(); ++p) {
    BOOST_TEST(metric(m, "sandboxd_projection_lag_records", {{"partition", std::to_string(p)}}) ==
               0);
    BOOST_TEST(metric(m, "sandboxd_log_end_offset", {{"partition", std::to_string(p)}}) ==
               static_cast<double>(n.log().end_offset(p).offset));
  }
  n.stop();
}

BOOST_AUTO_TEST_CASE(unreachable_postgres_is_refused_and_nothing_stays_started) {
  node_dir dir;
  auto cfg = node_config_for(dir, {hollow}, false);
  cfg.postgres =
    "host=" + dir.path() + "/no-server port=5432 user=postgres dbname=x password=s3cret";
  nd::node n(cfg);
  try {
    n.start();
    BOOST_FAIL("start succeeded without PostgreSQL");
  } catch (const nd::start_error& e) {
    const std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    BOOST_TEST(m.find("PostgreSQL") != std::string::npos);
    BOOST_TEST(m.find("unreachable") != std::string::npos);
    BOOST_TEST(m.find("s3cret") == std::string::npos, "the message shows the password");
  }
  BOOST_TEST(!n.running());
  // Everything it had started is stopped again: the same data directory (its lock, its
  // log) serves a node with a reachable server.
  nd::node again(node_config_for(dir, {hollow}, false));
  again.start();
  BOOST_TEST(again.running());
  again.stop();
}

BOOST_AUTO_TEST_CASE(commands_after_stop_are_unavailable) {
  node_dir dir;
  nd::node n(node_config_for(dir, {hollow}, false));
  n.start();
  auto r = n.call("", create_command(hollow));
  BOOST_REQUIRE(r.ok());
  n.stop();
  auto after = n.call(r.state.sandbox_id, user_command(cmd::pause{}));
  BOOST_REQUIRE(!after.ok());
  BOOST_TEST(after.failure->code == ev::errc::unavailable);
  BOOST_TEST(n.get(r.state.sandbox_id, "t1").failure->code == ev::errc::unavailable);
}

// Stop lets the projectors apply the whole log first: right after a burst of commands the
// read models lag (each commit is slowed down here, so they surely do), and after stop()
// they hold every record.
BOOST_AUTO_TEST_CASE(stop_applies_the_whole_log_to_the_read_models) {
  node_dir dir;
  auto cfg = node_config_for(dir, {hollow}, false);
  cfg.on_projection_commit = [](const auto&) { std::this_thread::sleep_for(300ms); };
  nd::node n(cfg);
  n.start();
  std::atomic<int> replies{0}, failures{0};
  const int count = 400;
  for (int i = 0; i < count; ++i)
    n.submit("", create_command(hollow), ac::reply_when::settled, [&](ac::command_reply r) {
      failures += r.ok() ? 0 : 1;
      ++replies;
    });
  BOOST_REQUIRE(eventually([&] { return replies.load() == count; }));
  BOOST_REQUIRE_EQUAL(failures.load(), 0);
  std::map<std::int32_t, std::int64_t> ends;
  std::int64_t behind = 0;
  for (const auto& l : n.lag()) {
    ends[l.partition] = l.end_offset;
    behind += l.lag();
  }
  BOOST_TEST_MESSAGE("the read models are " << behind << " records behind at stop");
  n.stop();
  pqxx::connection c(pg_server::shared().conninfo());
  pqxx::work tx(c);
  std::map<std::int32_t, std::int64_t> stored;
  for (const auto& r : tx.exec("SELECT partition, next_offset FROM " + tx.quote_name(cfg.schema) +
                               ".projection_offsets WHERE projection = 'read_models'"))
    stored[r[0].as<std::int32_t>()] = r[1].as<std::int64_t>();
  BOOST_REQUIRE(!ends.empty());
  for (const auto& [p, end] : ends)
    BOOST_TEST(stored[p] == end, "partition " << p << ": the read models stopped at " << stored[p]
                                              << " of " << end << " records");
}

// The file log has no topic: test_node_file leaves this case out (label kafka_only).
BOOST_AUTO_TEST_CASE(a_topic_that_does_not_fit_is_refused,
                     *utf::label("kafka_only") * utf::precondition(log_under_test_is_kafka)) {
  node_dir dir;
  auto cfg = node_config_for(dir, {hollow}, false);
  create_topic(cfg.kafka.brokers, cfg.kafka.topic, 3);
  cfg.partitions = 4;
  nd::node n(cfg);
  try {
    n.start();
    BOOST_FAIL("start succeeded on a topic with another partition count");
  } catch (const nd::start_error& e) {
    const std::string m = e.what();
    BOOST_TEST_MESSAGE(m);
    BOOST_TEST(m.find("event log") != std::string::npos);
    BOOST_TEST(m.find(cfg.kafka.topic) != std::string::npos);
  }
  BOOST_TEST(!n.running());
}

namespace {

pid_t spawn_worker(const std::string& dir, const nd::node_config& cfg, std::uint64_t seed) {
  std::vector<std::string> args{beside_this_binary("node_worker"), dir, std::to_string(seed),
                                cfg.log == nd::log_kind::kafka ? "kafka" : "file"};
  if (cfg.log == nd::log_kind::kafka) {
    args.push_back(cfg.kafka.brokers);
    args.push_back(cfg.kafka.topic);
  }
  return sandboxd::test::spawn_logged(args, dir + "/worker.out", true);
}

} // namespace

// A node process killed with SIGKILL under load (commands, and execs and file writes through
// the control plane's operations), three times, then a node in this process on the same data
// directory: every acknowledged command and operation is in the log with its outcome, no exec
// or change is left without an outcome (those the kills cut short are `interrupted`), every
// transaction the killed PostgreSQL committed is still there, and the read models catch up
// exactly.
BOOST_AUTO_TEST_CASE(embedded_postgres_survives_kill_9_of_the_node_process) {
  node_dir dir;
  auto cfg = node_config_for(dir, {hollow}, true);
  // The kill moments and the workers' workloads come from one printed seed.
  std::mt19937_64 rng(sandboxd::test::test_seed("embedded_postgres_survives_kill_9"));
  for (int round = 0; round < 3; ++round) {
    std::filesystem::remove(dir.path() + "/ready");
    const pid_t child = spawn_worker(dir.path(), cfg, rng());
    BOOST_REQUIRE(child > 0);
    BOOST_REQUIRE_MESSAGE(
      eventually([&] { return std::filesystem::exists(dir.path() + "/ready"); }, 120s),
      "round " << round << ": the worker did not start; see " << dir.path() << "/worker.out");
    std::this_thread::sleep_for(std::chrono::milliseconds(700 + rng() % 1300));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status), "round " << round << ": the worker ended by itself");
    // Its PostgreSQL goes with it (parent-death signal: immediate shutdown).
    BOOST_TEST(eventually([&] { return processes_under(cfg.data_dir + "/postgres").empty(); }, 60s),
               "round " << round << ": the killed node's PostgreSQL still runs");
  }

  nd::node n(cfg);
  n.start();
  std::map<std::string, std::uint64_t> acked;
  {
    std::ifstream acks(dir.path() + "/acks");
    std::string id;
    std::uint64_t seq = 0;
    while (acks >> id >> seq)
      acked[id] = std::max(acked[id], seq);
  }
  BOOST_TEST_MESSAGE(acked.size() << " sandboxes with acknowledged commands");
  BOOST_REQUIRE(acked.size() > 3u);
  for (const auto& [id, seq] : acked) {
    const auto events = events_of(n.log(), id);
    BOOST_TEST(events.size() >= seq, id << " acknowledged at " << seq << ", the log holds "
                                        << events.size() << " events");
  }
  // Every acknowledged exec and write has its completed outcome in the log.
  std::map<std::string, std::set<std::string>> ops_of;
  {
    std::ifstream ops(dir.path() + "/ops");
    std::string id, kind, op;
    while (ops >> id >> kind >> op)
      ops_of[id].insert(kind + " " + op);
  }
  std::size_t acked_ops = 0, interrupted = 0;
  for (const auto& [id, done] : ops_of)
    acked_ops += done.size();
  BOOST_TEST_MESSAGE(acked_ops << " execs and writes acknowledged");
  BOOST_REQUIRE(acked_ops > 10u);
  std::set<std::string> sandboxes;
  for (const auto& [id, seq] : acked)
    sandboxes.insert(id);
  for (const auto& [id, done] : ops_of)
    sandboxes.insert(id);
  for (const auto& id : sandboxes) {
    const auto events = events_of(n.log(), id);
    for (const auto& open : outcomes_missing(events))
      BOOST_ERROR(id << ": " << open << " is still in flight after recovery");
    std::set<std::string> completed;
    for (const auto& e : events) {
      if (auto* f = std::get_if<ev::exec_finished>(&e.body)) {
        interrupted += f->outcome == ev::op_outcome::interrupted;
        if (f->outcome == ev::op_outcome::completed)
          completed.insert("exec " + f->exec_id);
      } else if (auto* w = std::get_if<ev::file_op_finished>(&e.body)) {
        interrupted += w->outcome == ev::op_outcome::interrupted;
        if (w->outcome == ev::op_outcome::completed)
          completed.insert("write " + w->op_id);
      }
    }
    for (const auto& op : ops_of[id])
      BOOST_TEST(completed.count(op) == 1u, id << ": acknowledged " << op
                                               << " has no completed "
                                                  "outcome in the log");
  }
  BOOST_TEST_MESSAGE(interrupted << " execs and writes recorded as interrupted by recovery");
  BOOST_TEST(interrupted > 0u, "no kill found an exec or write in flight");
  // Every commit the killed servers acknowledged is still there.
  std::map<std::int32_t, std::int64_t> committed;
  {
    std::ifstream commits(dir.path() + "/commits");
    std::int32_t p = 0;
    std::int64_t next = 0;
    while (commits >> p >> next)
      committed[p] = std::max(committed[p], next);
  }
  BOOST_REQUIRE(!committed.empty());
  {
    pqxx::connection c(n.conninfo());
    pqxx::work tx(c);
    std::map<std::int32_t, std::int64_t> stored;
    for (const auto& r : tx.exec("SELECT partition, next_offset FROM public.projection_offsets "
                                 "WHERE projection = 'read_models'"))
      stored[r[0].as<std::int32_t>()] = r[1].as<std::int64_t>();
    for (const auto& [p, next] : committed)
      BOOST_TEST(stored[p] >= next, "partition " << p << ": a commit at " << next
                                                 << " was lost, PostgreSQL has " << stored[p]);
  }
  std::vector<std::string> ids;
  for (const auto& [id, seq] : acked)
    if (ids.size() < 40)
      ids.push_back(id);
  check_read_models(n, ids);
  for (const auto& l : n.lag())
    BOOST_TEST(l.lag() == 0);
  n.stop();
  for (int pid : processes_under(dir.data()))
    BOOST_ERROR("process " << pid << " left: " << process_line(pid));
}

BOOST_AUTO_TEST_SUITE_END()
