// The read models and the actors checked against the log on a running daemon (admin scope):
// - projections status shows each partition's offset, the log's end and the lag, which
//   grows (in events and seconds) while the projector is held and goes back to zero;
// - projections rebuild, while calls keep changing sandboxes, restores rows edited by hand
//   in SQL (verify reports exactly them before and nothing after);
// - check determinism passes after a randomized workload of 1,000 sandboxes on the hollow
//   runtime with a kill -9 of the daemon in the middle and a restart, and reports a sandbox
//   whose actor and log disagree.
#define BOOST_TEST_MODULE replay_live
#include "tests/e2e/e2e_support.hpp"

#include "api/client.hpp"
#include "events/file_log_reader.hpp"
#include "tests/projections/postgres_installed.hpp"
#include "tests/support/pg_server.hpp"
#include "tests/support/test_seed.hpp"

#include <pqxx/pqxx>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <thread>

using namespace sandboxd::test;
namespace api = sandboxd::api;
namespace events = sandboxd::events;

namespace {

// A sandboxd on a data directory of its own that can be killed (SIGKILL) and started again
// on the same directory; its read models in `postgres` (which outlives it).
class restartable_daemon {
public:
  restartable_daemon(std::string postgres) : postgres_(std::move(postgres)) { start(); }
  ~restartable_daemon() { stop(SIGTERM); }

  void start() {
    const std::string log = log_path(++starts_);
    std::vector<std::string> args{sandboxd_bin(), "--data-dir", dir_.data(), "--runtime",
                                  "hollow",       "--postgres", postgres_};
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::chdir(dir_.path().c_str());
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const bool ready = eventually(
      [&] { return exited() || read_text(log).find("sandboxd ready") != std::string::npos; }, 180s);
    if (!ready || exited())
      throw std::runtime_error("sandboxd did not become ready:\n" + read_text(log));
    token_ = read_text(dir_.data() + "/dev-token");
    while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' '))
      token_.pop_back();
  }

  // Ends the daemon with `signal` (SIGKILL: no shutdown at all) and reaps it.
  void stop(int signal) {
    if (pid_ <= 0)
      return;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  std::string address() const { return "unix:" + dir_.data() + "/sandboxd.sock"; }
  const std::string& token() const { return token_; }
  std::string data() const { return dir_.data(); }

  ctl_result ctl(const std::vector<std::string>& args) const {
    ctl_options o;
    o.env.emplace("SANDBOXD_ADDR", address());
    o.env.emplace("SANDBOXD_TOKEN", token_);
    return run_process(sandboxctl_bin(), args, o);
  }

private:
  std::string log_path(int n) const {
    return dir_.path() + "/sandboxd-" + std::to_string(n) + ".log";
  }
  bool exited() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return pid_ <= 0;
  }

  std::string postgres_;
  node_dir dir_;
  pid_t pid_ = -1;
  int starts_ = 0;
  std::string token_;
};

// Every record of the daemon's file log (a read-only reader on the live directory).
std::int64_t records_in_log(const std::string& data_dir) {
  events::file_log_reader reader(data_dir + "/log");
  std::int64_t n = 0;
  for (std::int32_t p = 0; p < reader.partitions(); ++p)
    n += reader.end_offset(p).offset;
  return n;
}

json status_of(const daemon_process& d) {
  auto r = ctl(d, {"--json", "projections", "status"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r);
  return r.doc();
}

std::int64_t total(const json& status, const char* field) {
  std::int64_t n = 0;
  for (const auto& p : status["partitions"])
    n += p[field].get<std::int64_t>();
  return n;
}

} // namespace

// status: every partition of the log with the projection's offset and the log's end; with the
// projector held (its offset rows locked in SQL) the lag counts exactly the events appended
// meanwhile and their age; released, it goes back to zero.
BOOST_AUTO_TEST_CASE(projections_status_shows_offsets_ends_and_lag,
                     *utf::precondition(postgres_installed)) {
  daemon_process d({"--runtime", "hollow"});
  create(d, {"--memory", "512"});
  json st;
  BOOST_TEST(eventually([&] {
    st = status_of(d);
    return total(st, "lag_events") == 0 && total(st, "end_offset") > 0;
  }));
  BOOST_REQUIRE_EQUAL(st["partitions"].size(), 8u); // the daemon's default partitions
  for (const auto& p : st["partitions"]) {
    BOOST_TEST(p["projection"] == "read_models");
    BOOST_TEST(p["offset"] == p["end_offset"]);
    BOOST_TEST(p["lag_seconds"].get<double>() == 0.0);
  }
  BOOST_TEST(total(st, "end_offset") == records_in_log(d.data()));

  pqxx::connection c(d.pg_conninfo());
  pqxx::work hold(c);
  hold.exec("SELECT * FROM projection_offsets FOR UPDATE"); // the projector waits
  const auto held_at = total(st, "offset");
  const auto before = records_in_log(d.data());
  const auto a = create(d, {"--memory", "512"});
  ctl_ok(d, {"pause", a});
  std::this_thread::sleep_for(1500ms);
  st = status_of(d);
  const auto appended = records_in_log(d.data()) - before;
  BOOST_TEST(appended >= 4); // created, started, pause_requested, paused
  BOOST_TEST(total(st, "offset") == held_at);
  BOOST_TEST(total(st, "lag_events") == appended);
  for (const auto& p : st["partitions"])
    if (p["lag_events"].get<std::int64_t>() > 0)
      BOOST_TEST(p["lag_seconds"].get<double>() >= 1.4, p.dump());
  auto text = ctl(d, {"projections", "status"});
  BOOST_TEST(text.exit_code == 0);
  BOOST_TEST(text.out.find("PROJECTION") != std::string::npos, text.out);
  hold.abort();

  BOOST_TEST(eventually([&] { return total(status_of(d), "lag_events") == 0; }));
}

// rebuild: rows edited by hand are what verify reports; a rebuild while clients keep changing
// sandboxes makes verify report nothing, and every call during it succeeded.
BOOST_AUTO_TEST_CASE(projections_rebuild_restores_rows_edited_by_hand_while_calls_continue,
                     *utf::precondition(postgres_installed)) {
  daemon_process d({"--runtime", "hollow"});
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i)
    ids.push_back(create(d, {"--memory", "512", "--label", "n=" + std::to_string(i)}));
  ctl_ok(d, {"pause", ids[0]});
  ctl_ok(d, {"delete", ids[1]});
  BOOST_TEST(eventually([&] {
    auto r = ctl(d, {"--json", "projections", "verify"});
    return r.exit_code == 0 && r.doc()["rows_compared"].get<std::uint64_t>() > 0;
  }));

  {
    pqxx::connection c(d.pg_conninfo());
    pqxx::work tx(c);
    BOOST_REQUIRE_EQUAL(
      tx.exec_params("UPDATE sandboxes SET writable_layer_bytes = 4242 WHERE id = $1", ids[2])
        .affected_rows(),
      1);
    BOOST_REQUIRE_EQUAL(
      tx.exec_params("UPDATE sandboxes SET labels = '{\"n\": \"edited\"}' WHERE id = $1", ids[3])
        .affected_rows(),
      1);
    tx.commit();
  }
  auto r = ctl(d, {"--json", "projections", "verify"});
  BOOST_TEST(r.exit_code == 1, r.out);
  const auto report = r.doc();
  std::set<std::pair<std::string, std::string>> edited; // (id, side)
  for (const auto& diff : report["differences"]) {
    BOOST_TEST(diff["table"] == "sandboxes");
    edited.emplace(diff["row"]["id"].get<std::string>(), diff["side"].get<std::string>());
  }
  const std::set<std::pair<std::string, std::string>> expected{
    {ids[2], "live"}, {ids[2], "rebuild"}, {ids[3], "live"}, {ids[3], "rebuild"}};
  BOOST_TEST((edited == expected), r.out);

  // Calls continue through the rebuild: create, pause, resume, delete, one after the other.
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0}, failed{0};
  std::thread traffic([&] {
    while (!stop) {
      auto created = ctl(d, {"create", "--memory", "256"});
      if (created.exit_code != 0) {
        ++failed;
        continue;
      }
      const auto id = created.out.substr(0, created.out.size() - 1);
      for (auto* step : {"pause", "resume", "delete"})
        (ctl(d, {step, id}).exit_code == 0 ? calls : failed)++;
      ++calls;
    }
  });
  std::this_thread::sleep_for(500ms);
  const int calls_before = calls;
  auto rebuilt = ctl(d, {"--json", "projections", "rebuild", "read_models"});
  const int calls_during = calls - calls_before;
  std::this_thread::sleep_for(300ms);
  stop = true;
  traffic.join();
  BOOST_REQUIRE_MESSAGE(rebuilt.exit_code == 0, rebuilt);
  BOOST_TEST(rebuilt.doc()["rows_replaced"].get<std::uint64_t>() > 0);
  BOOST_TEST(failed == 0);
  BOOST_TEST(calls_during > 0, "no call completed while the rebuild ran");

  json check;
  BOOST_TEST(eventually([&] {
    auto v = ctl(d, {"--json", "projections", "verify"});
    check = v.doc();
    return v.exit_code == 0;
  }));
  BOOST_TEST(check["differences"].empty(), check.dump());
  BOOST_TEST(ctl(d, {"projections", "rebuild", "nothing"}).exit_code == 201);
}

// check determinism after 1,000 sandboxes and random lifecycle calls from four clients, the
// daemon killed with SIGKILL while they run and started again on the same directory.
BOOST_AUTO_TEST_CASE(check_determinism_passes_after_a_random_workload_and_a_kill_9,
                     *utf::precondition(postgres_installed)) {
  pg_server pg;
  restartable_daemon d(pg.conninfo());
  std::mutex mu;
  std::vector<std::string> ids;
  std::atomic<int> done{0};

  // Each worker: connect, then create `creates` sandboxes and make `ops` random calls on
  // known ones; it stops at the first call the daemon does not answer (it was killed).
  // Every worker's choices come from the one printed seed.
  const auto seed = sandboxd::test::test_seed("check_determinism_after_a_kill_9");
  auto work = [&](std::uint64_t stream, int creates, int ops) {
    auto c = api::client::connect({d.address(), d.token()});
    BOOST_REQUIRE(c.ok());
    std::mt19937_64 rng(seed + stream);
    auto lost = [](const auto& r) { return !r.ok() && r.code() == sandboxd::errc::unavailable; };
    for (int i = 0; i < creates; ++i) {
      api::create_options o;
      o.limits.memory_mib = 128u << (rng() % 4);
      o.labels = {{"seed", std::to_string(seed)}};
      auto r = c->create(o);
      if (lost(r))
        return;
      if (r.ok()) {
        std::lock_guard l(mu);
        ids.push_back(r->id);
      }
      ++done;
    }
    for (int i = 0; i < ops; ++i) {
      std::string id;
      {
        std::lock_guard l(mu);
        id = ids[rng() % ids.size()];
      }
      bool gone = false;
      switch (rng() % 6) {
      case 0:
        gone = lost(c->pause(id, events::pause_mode::filesystem));
        break;
      case 1:
        gone = lost(c->pause(id, events::pause_mode::memory));
        break;
      case 2:
      case 3:
        gone = lost(c->resume(id));
        break;
      case 4: {
        api::timeout_change t;
        t.idle_timeout = std::chrono::minutes(1 + rng() % 30);
        gone = lost(c->set_timeouts(id, t));
        break;
      }
      default:
        if (rng() % 4 == 0)
          gone = lost(c->remove(id));
        else
          gone = lost(c->get(id));
      }
      if (gone)
        return;
      ++done;
    }
  };

  {
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < 4; ++w)
      workers.emplace_back(work, 100u + w, 200, 400);
    // Kill in the middle: once the first 400 of 2,400 calls were answered, calls in flight.
    BOOST_REQUIRE(eventually([&] { return done >= 1000; }, 300s));
    d.stop(SIGKILL);
    for (auto& t : workers)
      t.join();
  }
  const int before_kill = done;
  BOOST_TEST_MESSAGE(before_kill << " calls answered before the kill");
  BOOST_TEST(before_kill < 2400);

  d.start();
  {
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < 4; ++w)
      workers.emplace_back(work, 200u + w, 50, 300);
    for (auto& t : workers)
      t.join();
  }
  BOOST_TEST(ids.size() >= 1000u);

  auto r = d.ctl({"--json", "check", "determinism"});
  BOOST_TEST(r.exit_code == 0, r);
  const auto check = r.doc();
  BOOST_TEST(check["equal"] == true);
  BOOST_TEST(check["checked"].get<std::size_t>() >= ids.size());
  BOOST_TEST(check["differences"].empty(), check.dump().substr(0, 2000));

  auto one = d.ctl({"--json", "check", "determinism", ids.front()});
  BOOST_TEST(one.exit_code == 0, one);
  BOOST_TEST(one.doc()["checked"] == 1);
  BOOST_TEST(d.ctl({"check", "determinism", "sb_nope"}).exit_code == 201);
}
