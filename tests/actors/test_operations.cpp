// test_operations.cpp — exec, reads and file changes through the sandbox's actor, on the
// hollow driver and the file log: the caller gets the driver's answer, changes are logged
// before they reach the sandbox and their outcome after, reads once served, background execs
// are listed, waited for and killed, and recovery leaves nothing in flight.
#define BOOST_TEST_MODULE operations
#include <boost/test/unit_test.hpp>

#include "base/sha256.hpp"
#include "tests/actors/actor_world.hpp"

#include <csignal>
#include <future>
#include <mutex>

using namespace sandboxd::test;
using sandboxd::sha256_of;
using sandboxd::actors::op_result;

namespace {

// Calls an asynchronous operation and waits for its answer.
template <class T, class F>
op_result<T> await(F start) {
  auto p = std::make_shared<std::promise<op_result<T>>>();
  auto f = p->get_future();
  start([p](op_result<T> r) { p->set_value(std::move(r)); });
  return f.get();
}

const ac::caller alice{"acme", "alice", "corr-ops"};

std::string all_bytes() {
  std::string b;
  for (int i = 0; i < 256; ++i)
    b.push_back(static_cast<char>(i));
  return b;
}

template <class Payload>
std::vector<Payload> payloads(const std::vector<ev::event>& evs) {
  std::vector<Payload> out;
  for (const auto& e : evs)
    if (auto* p = std::get_if<Payload>(&e.body))
      out.push_back(*p);
  return out;
}

// The position in `evs` of the first event holding Payload that `match` accepts.
template <class Payload, class Match>
std::ptrdiff_t position(const std::vector<ev::event>& evs, Match match) {
  for (std::size_t i = 0; i < evs.size(); ++i)
    if (auto* p = std::get_if<Payload>(&evs[i].body); p && match(*p))
      return static_cast<std::ptrdiff_t>(i);
  return -1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(files)

BOOST_AUTO_TEST_CASE(a_write_is_logged_before_and_after_and_reads_return_the_drivers_answer) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  const std::string bytes = all_bytes();
  auto wr = await<ev::file_op_finished>(
    [&](auto done) { plane.write_file(id, alice, "/workspace/all.bin", bytes, 0600, done); });
  BOOST_REQUIRE_MESSAGE(wr.ok(), wr.failure->message);
  BOOST_TEST(wr.value.bytes == 256u);
  BOOST_TEST((wr.value.sha256 == sha256_of(bytes)));

  auto rd =
    await<std::string>([&](auto done) { plane.read_file(id, alice, "/workspace/all.bin", done); });
  BOOST_REQUIRE(rd.ok());
  BOOST_TEST((rd.value == bytes), "bytes 0-255 round-trip");
  auto st = await<runtime::file_info>(
    [&](auto done) { plane.stat(id, alice, "/workspace/all.bin", done); });
  BOOST_REQUIRE(st.ok());
  BOOST_TEST(st.value.size == 256u);
  BOOST_TEST(st.value.mode == 0600u);

  const auto evs = events_of(*w.log, id);
  const auto requested = position<ev::file_op_requested>(evs, [](auto& p) {
    return p.path == "/workspace/all.bin" && p.kind == ev::file_op_kind::write;
  });
  BOOST_REQUIRE(requested >= 0);
  const auto& intent = std::get<ev::file_op_requested>(evs[requested].body);
  const auto finished =
    position<ev::file_op_finished>(evs, [&](auto& p) { return p.op_id == intent.op_id; });
  BOOST_TEST(finished > requested, "the outcome follows the intent");
  const auto& outcome = std::get<ev::file_op_finished>(evs[finished].body);
  BOOST_TEST((outcome.outcome == ev::op_outcome::completed));
  BOOST_TEST((outcome.sha256 == sha256_of(bytes)));
  BOOST_TEST(evs[finished].causation_id == evs[requested].event_id);
  BOOST_TEST(wr.own_sequence == evs[finished].sequence);
  auto reads = payloads<ev::file_read>(evs);
  BOOST_REQUIRE_EQUAL(reads.size(), 2u);
  BOOST_TEST((reads[0].kind == ev::file_read_kind::read));
  BOOST_TEST((reads[0].sha256 == sha256_of(bytes)));
  BOOST_TEST(reads[0].bytes == 256u);
  BOOST_TEST((reads[1].kind == ev::file_read_kind::stat));
  BOOST_TEST(rd.own_sequence > wr.own_sequence, "the read is logged before it is answered");

  // With its digest: the one its file_read records, computed once for both.
  auto hashed = await<ac::control_plane::file_content>(
    [&](auto done) { plane.read_file_with_digest(id, alice, "/workspace/all.bin", done); });
  BOOST_REQUIRE(hashed.ok());
  BOOST_TEST((hashed.value.bytes == bytes));
  BOOST_TEST((hashed.value.sha256 == sha256_of(bytes)));
  const auto later = payloads<ev::file_read>(events_of(*w.log, id));
  BOOST_REQUIRE_EQUAL(later.size(), 3u);
  BOOST_TEST((later[2].sha256 == hashed.value.sha256));
  BOOST_TEST(later[2].bytes == 256u);
  auto missing = await<ac::control_plane::file_content>(
    [&](auto done) { plane.read_file_with_digest(id, alice, "/workspace/none", done); });
  BOOST_TEST((!missing.ok() && missing.failure->code == ev::errc::not_found));
}

BOOST_AUTO_TEST_CASE(make_dir_rename_list_and_recursive_remove) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  auto ok = [](const op_result<ev::file_op_finished>& r) {
    BOOST_TEST_REQUIRE(r.ok(), (r.failure ? r.failure->message : ""));
  };
  ok(await<ev::file_op_finished>(
    [&](auto done) { plane.make_dir(id, alice, "/w/a/b", true, 0755, done); }));
  ok(await<ev::file_op_finished>(
    [&](auto done) { plane.write_file(id, alice, "/w/a/b/f", "x", 0644, done); }));
  ok(await<ev::file_op_finished>(
    [&](auto done) { plane.rename_path(id, alice, "/w/a", "/w/c", done); }));
  auto listing =
    await<runtime::dir_listing>([&](auto done) { plane.list_dir(id, alice, "/w", done); });
  BOOST_REQUIRE(listing.ok());
  BOOST_REQUIRE_EQUAL(listing.value.entries.size(), 1u);
  BOOST_TEST(listing.value.entries[0].name == "c");
  // Not empty: a plain remove is the driver's error, given to the caller and logged.
  auto plain = await<ev::file_op_finished>(
    [&](auto done) { plane.remove_path(id, alice, "/w/c", false, done); });
  BOOST_REQUIRE(!plain.ok());
  BOOST_TEST((plain.value.outcome == ev::op_outcome::failed));
  ok(await<ev::file_op_finished>(
    [&](auto done) { plane.remove_path(id, alice, "/w/c", true, done); }));
  auto gone = await<runtime::file_info>([&](auto done) { plane.stat(id, alice, "/w/c", done); });
  BOOST_TEST((!gone.ok() && gone.failure->code == ev::errc::not_found));
  const auto evs = events_of(*w.log, id);
  const auto failures = payloads<ev::file_op_finished>(evs);
  BOOST_TEST(std::count_if(failures.begin(), failures.end(), [](auto& f) {
               return f.outcome == ev::op_outcome::failed && f.failure.has_value();
             }) == 1);
  const auto reads = payloads<ev::file_read>(evs);
  BOOST_TEST((reads.back().failure && reads.back().failure->code == ev::errc::not_found),
             "a failed read is logged with its failure");
}

BOOST_AUTO_TEST_CASE(memory_pause_refuses_changes_and_serves_reads_filesystem_pause_takes_writes) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  BOOST_REQUIRE(await<ev::file_op_finished>([&](auto done) {
                  plane.write_file(id, alice, "/m", "1", 0644, done);
                }).ok());
  BOOST_REQUIRE(plane.call(id, user(ac::cmd::pause{ev::pause_mode::memory})).ok());
  auto refused = await<ev::file_op_finished>(
    [&](auto done) { plane.write_file(id, alice, "/m", "2", 0644, done); });
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST((refused.failure->code == ev::errc::conflict));
  auto rd = await<std::string>([&](auto done) { plane.read_file(id, alice, "/m", done); });
  BOOST_REQUIRE(rd.ok());
  BOOST_TEST(rd.value == "1");
  BOOST_TEST(payloads<ev::file_op_requested>(events_of(*w.log, id)).size() == 1u,
             "a refused change reaches neither the log's intents nor the sandbox");

  BOOST_REQUIRE(plane.call(id, user(ac::cmd::resume{})).ok());
  BOOST_REQUIRE(plane.call(id, user(ac::cmd::pause{ev::pause_mode::filesystem})).ok());
  auto offline = await<ev::file_op_finished>(
    [&](auto done) { plane.write_file(id, alice, "/m", "3", 0644, done); });
  BOOST_REQUIRE(offline.ok());
  BOOST_REQUIRE(plane.call(id, user(ac::cmd::resume{})).ok());
  rd = await<std::string>([&](auto done) { plane.read_file(id, alice, "/m", done); });
  BOOST_TEST(rd.value == "3");
}

BOOST_AUTO_TEST_CASE(another_tenant_and_an_unknown_sandbox_are_not_found) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  auto other = await<std::string>([&](auto done) {
    plane.read_file(id, ac::caller{"evil", "mallory", ""}, "/m", done);
  });
  BOOST_TEST((!other.ok() && other.failure->code == ev::errc::not_found));
  auto missing = await<std::string>([&](auto done) { plane.read_file("nope", alice, "/m", done); });
  BOOST_TEST((!missing.ok() && missing.failure->code == ev::errc::not_found));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(execs)

BOOST_AUTO_TEST_CASE(output_is_streamed_before_the_result_and_only_its_hash_is_logged) {
  world w;
  auto& plane = w.start();
  auto s = spec();
  s.env = {{"API_TOKEN", "tok-s3cr3t", true, std::nullopt}};
  const auto id = w.create(s);
  std::mutex mu;
  std::string seen;
  bool result_arrived = false, streamed_before = false;
  ac::exec_request r;
  r.argv = {"echo", "hello", "world"};
  r.env = {{"EXEC_SECRET", "hunter2", true, std::nullopt}};
  r.stdin_data = std::string("in\0\xff", 4);
  auto res = await<ev::exec_finished>([&](auto done) {
    plane.exec(
      id, alice, r,
      [&](runtime::output_stream, std::string_view d) {
        std::lock_guard l(mu);
        seen += d;
        streamed_before = !result_arrived;
      },
      [&, done](op_result<ev::exec_finished> x) {
        {
          std::lock_guard l(mu);
          result_arrived = true;
        }
        done(std::move(x));
      });
  });
  BOOST_REQUIRE_MESSAGE(res.ok(), res.failure->message);
  BOOST_TEST(seen == "hello world\n");
  BOOST_TEST(streamed_before);
  BOOST_TEST(res.value.exit_code == 0);
  BOOST_TEST(res.value.stdout_bytes == 12u);
  BOOST_TEST((res.value.stdout_sha256 == sha256_of("hello world\n")));
  BOOST_TEST((res.value.outcome == ev::op_outcome::completed));

  const auto evs = events_of(*w.log, id);
  const auto started = payloads<ev::exec_started>(evs);
  BOOST_REQUIRE_EQUAL(started.size(), 1u);
  BOOST_TEST(started[0].stdin_bytes == 4u);
  BOOST_TEST((started[0].stdin_sha256 == sha256_of(std::string("in\0\xff", 4))));
  BOOST_REQUIRE_EQUAL(started[0].env.size(), 1u);
  BOOST_TEST(started[0].env[0].value.empty());
  BOOST_TEST(!started[0].env[0].value_sha256.has_value()); // nothing derived from the secret
  for (const auto& e : evs) {
    const auto bytes = ev::encode(e);
    BOOST_TEST(bytes.find("hunter2") == std::string::npos);
    BOOST_TEST(bytes.find("tok-s3cr3t") == std::string::npos);
    BOOST_TEST(bytes.find("hello world") == std::string::npos, "output is never logged");
  }
  BOOST_TEST(position<ev::exec_finished>(evs, [](auto&) { return true; }) >
             position<ev::exec_started>(evs, [](auto&) { return true; }));
}

BOOST_AUTO_TEST_CASE(a_missing_program_is_its_exit_code_and_exec_needs_a_running_sandbox) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  ac::exec_request r;
  r.argv = {"no-such-program"};
  auto res = await<ev::exec_finished>([&](auto done) { plane.exec(id, alice, r, {}, done); });
  BOOST_REQUIRE(res.ok());
  BOOST_TEST(res.value.exit_code == 127);
  BOOST_TEST(res.value.stderr_bytes > 0u);
  BOOST_REQUIRE(plane.call(id, user(ac::cmd::pause{ev::pause_mode::filesystem})).ok());
  auto paused = await<ev::exec_finished>([&](auto done) { plane.exec(id, alice, r, {}, done); });
  BOOST_TEST((!paused.ok() && paused.failure->code == ev::errc::conflict));
}

BOOST_AUTO_TEST_CASE(a_background_exec_is_listed_waited_for_and_killed) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  ac::exec_request r;
  r.argv = {"sleep", "600"};
  auto started = await<std::string>([&](auto done) { plane.start_exec(id, alice, r, {}, done); });
  BOOST_REQUIRE(started.ok());
  const auto exec_id = started.value;
  auto listed =
    await<std::vector<ev::exec_started>>([&](auto done) { plane.list_execs(id, "acme", done); });
  BOOST_REQUIRE(listed.ok());
  BOOST_REQUIRE_EQUAL(listed.value.size(), 1u);
  BOOST_TEST(listed.value[0].exec_id == exec_id);
  BOOST_TEST(listed.value[0].background);

  auto waited = std::make_shared<std::promise<op_result<ev::exec_finished>>>();
  plane.wait_exec(id, "acme", exec_id,
                  [waited](op_result<ev::exec_finished> x) { waited->set_value(std::move(x)); });
  auto killed = await<ev::exec_kill_requested>(
    [&](auto done) { plane.kill_exec(id, alice, exec_id, SIGKILL, done); });
  BOOST_REQUIRE_MESSAGE(killed.ok(), killed.failure->message);
  auto fin = waited->get_future().get();
  BOOST_REQUIRE(fin.ok());
  BOOST_TEST(fin.value.signal == SIGKILL);
  BOOST_TEST(fin.value.exit_code == -1);

  // Finished recently: answered at once; no longer listed.
  auto again =
    await<ev::exec_finished>([&](auto done) { plane.wait_exec(id, "acme", exec_id, done); });
  BOOST_TEST((again.ok() && again.value.signal == SIGKILL));
  listed =
    await<std::vector<ev::exec_started>>([&](auto done) { plane.list_execs(id, "acme", done); });
  BOOST_TEST(listed.value.empty());
  auto unknown =
    await<ev::exec_finished>([&](auto done) { plane.wait_exec(id, "acme", "never-ran", done); });
  BOOST_TEST((!unknown.ok() && unknown.failure->code == ev::errc::not_found));

  const auto evs = events_of(*w.log, id);
  const auto kill_at =
    position<ev::exec_kill_requested>(evs, [&](auto& p) { return p.exec_id == exec_id; });
  const auto end_at =
    position<ev::exec_finished>(evs, [&](auto& p) { return p.exec_id == exec_id; });
  BOOST_TEST(kill_at >= 0);
  BOOST_TEST(end_at > kill_at, "the kill is logged before the exec's end");
}

BOOST_AUTO_TEST_CASE(an_exec_timeout_ends_it_and_no_timeout_means_none) {
  world w;
  auto& plane = w.start();
  const auto id = w.create();
  ac::exec_request r;
  r.argv = {"sleep", "600"};
  r.timeout = 50ms;
  auto res = await<ev::exec_finished>([&](auto done) { plane.exec(id, alice, r, {}, done); });
  BOOST_REQUIRE(res.ok());
  BOOST_TEST(res.value.timed_out);
  r.argv = {"sleep", "0.3"};
  r.timeout = std::chrono::milliseconds(0);
  res = await<ev::exec_finished>([&](auto done) { plane.exec(id, alice, r, {}, done); });
  BOOST_REQUIRE(res.ok());
  BOOST_TEST(!res.value.timed_out);
  BOOST_TEST(res.value.exit_code == 0);
  const auto started = payloads<ev::exec_started>(events_of(*w.log, id));
  BOOST_TEST((started.back().timeout == ev::nanoseconds(0)), "no hidden default timeout");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(create_settings)

BOOST_AUTO_TEST_CASE(a_runtime_the_node_lacks_and_an_unenforceable_network_are_refused) {
  world w;
  w.options.driver = nullptr;
  w.options.drivers = {{ev::runtime_kind::hollow, &w.driver}};
  w.options.default_runtime = ev::runtime_kind::hollow;
  auto& plane = w.start();
  auto s = spec();
  s.runtime = ev::runtime_kind::crun;
  auto r = plane.call("", user(ac::cmd::create{s}));
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST((r.failure->code == ev::errc::invalid_argument));
  BOOST_TEST(r.failure->message.find("hollow") != std::string::npos, r.failure->message);
  s = spec();
  s.network.mode = ev::network_mode::full;
  r = plane.call("", user(ac::cmd::create{s}));
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST((r.failure->code == ev::errc::invalid_argument));
  BOOST_TEST(r.failure->message.find("none") != std::string::npos, r.failure->message);
  BOOST_TEST(!w.create().empty(), "the kind the node holds is served");
}

BOOST_AUTO_TEST_CASE(the_run_timeout_applies_the_idle_action) {
  world w;
  auto& plane = w.start();
  auto s = spec();
  s.timeouts.timeout = 10min;
  const auto id = w.create(s);
  ev::sandbox_timeouts probe;
  probe.timeout = 9min;
  const auto probe_id = w.create(probe_spec(probe));
  w.clock.advance(9min);
  BOOST_TEST(after_due_timers(w, probe_id, id, ac::cmd::resume{}) ==
               (std::vector<std::string>{"created", "started", "command_rejected"}),
             boost::test_tools::per_element());
  w.clock.advance(2min);
  BOOST_TEST(eventually([&] { return w.status(id) == ac::sandbox_status::paused; }));
  (void)plane;
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(recovery_of_operations)

BOOST_AUTO_TEST_CASE(execs_and_changes_in_flight_at_a_crash_end_interrupted) {
  world w;
  w.start();
  const auto id = w.create();
  w.stop();
  // What a crash between intent and outcome leaves: the intents, no outcomes.
  auto s = ac::initial_state(id);
  for (const auto& e : events_of(*w.log, id))
    s = ac::evolve(s, e);
  auto append = [&](ac::command_body body) {
    auto d = ac::decide(s, user(std::move(body)), w.clock.now());
    BOOST_REQUIRE(d.ok());
    std::vector<ev::log_record> batch;
    for (const auto& e : d.emitted()) {
      s = ac::evolve(s, e);
      batch.push_back({e.sandbox_id, ev::encode(e)});
    }
    BOOST_REQUIRE(w.log->append(std::move(batch)).get().ok());
  };
  append(ac::cmd::exec{"e-crashed", {"sleep", "600"}, "/", {}});
  ev::file_op_requested op;
  op.op_id = "op-crashed";
  op.path = "/x";
  append(ac::cmd::write_file{op, {}});

  auto& plane = w.restart();
  BOOST_TEST(plane.recovery().interrupted == std::vector<std::string>{id},
             boost::test_tools::per_element());
  const auto evs = events_of(*w.log, id);
  const auto ends = payloads<ev::exec_finished>(evs);
  BOOST_REQUIRE_EQUAL(ends.size(), 1u);
  BOOST_TEST((ends[0].outcome == ev::op_outcome::interrupted));
  const auto ops = payloads<ev::file_op_finished>(evs);
  BOOST_REQUIRE_EQUAL(ops.size(), 1u);
  BOOST_TEST(ops[0].op_id == "op-crashed");
  BOOST_TEST((ops[0].outcome == ev::op_outcome::interrupted));
  BOOST_TEST((ops[0].kind == ev::file_op_kind::write));
  auto listed =
    await<std::vector<ev::exec_started>>([&](auto done) { plane.list_execs(id, "acme", done); });
  BOOST_TEST(listed.value.empty());
  BOOST_TEST(plane.get(id, "acme").state.execs_in_flight.empty(), "the idle timer works again");
}

BOOST_AUTO_TEST_SUITE_END()
