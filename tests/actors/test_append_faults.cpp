// The actor system when appends fail: an append whose fate is unknown is resolved from the
// log and never reported as "nothing changed", its sequence numbers never go to another
// event; runtime results, exec results and timer firings whose append failed are recorded
// later, so the sandbox settles; recovery agrees with the live actors. The embedded file
// log on disk behind faulty_log, the hollow driver.
#define BOOST_TEST_MODULE append_faults
#include <boost/test/unit_test.hpp>

#include "actors/runtime_steps.hpp"
#include "tests/actors/actor_world.hpp"

#include <vector>

using namespace sandboxd::test;
using sandboxd::actors::sandbox_status;
namespace cmd = sandboxd::actors::cmd;

namespace {

ac::command_reply call(world& w, const std::string& id, ac::command_body body,
                       ac::reply_when when = ac::reply_when::settled) {
  return w.plane->call(id, user(std::move(body)), when);
}

std::string message_of(const ac::command_reply& r) {
  return r.failure ? r.failure->message : std::string("ok");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The sandbox's state as a fresh fold of its history (first copies) sees it.
ac::sandbox_state fold(const sandbox_history& h, const std::string& id) {
  auto s = ac::initial_state(id);
  for (const auto& e : h.events)
    s = ac::evolve(std::move(s), e);
  return s;
}

const std::vector<std::string> k_pause_history{"created", "started", "pause_requested", "paused",
                                               "storage_sampled"};

} // namespace

BOOST_AUTO_TEST_SUITE(unknown_outcome)

// The loss: the "failed" pause was stored, the next command reused its sequence
// number, and after a restart the acknowledged delete was gone.
BOOST_AUTO_TEST_CASE(an_append_that_landed_after_all_is_answered_as_done_and_no_sequence_reused) {
  world w;
  w.start();
  auto id = w.create();
  w.log->fail_next(append_fault::maybe_stored_written, holding<ev::pause_requested>());
  auto p = call(w, id, cmd::pause{});
  BOOST_TEST(w.log->injected(append_fault::maybe_stored_written) == 1u);
  BOOST_TEST(p.ok(), message_of(p));
  BOOST_TEST(p.state.status == sandbox_status::paused);
  BOOST_TEST(p.own_sequence == 3u); // pause_requested
  auto d = call(w, id, cmd::remove{});
  BOOST_TEST_REQUIRE(d.ok(), message_of(d));
  BOOST_TEST(d.state.status == sandbox_status::deleted);
  auto h = history_of(*w.log, id);
  BOOST_TEST(h.problem.empty(), h.problem);
  BOOST_TEST(h.duplicates == 0u); // found in the log: not appended again
  auto expected = k_pause_history;
  expected.insert(expected.end(), {"delete_requested", "deleted"});
  BOOST_TEST(type_names(h.events) == expected, boost::test_tools::per_element());

  w.restart();
  BOOST_TEST(w.status(id) == sandbox_status::deleted);
  BOOST_TEST(!w.hollow.inspect(id).ok());
}

BOOST_AUTO_TEST_CASE(an_append_that_did_not_land_is_appended_again_and_answered_as_done) {
  world w;
  w.start();
  auto id = w.create();
  w.log->fail_next(append_fault::maybe_stored_lost, holding<ev::pause_requested>());
  auto p = call(w, id, cmd::pause{});
  BOOST_TEST(w.log->injected(append_fault::maybe_stored_lost) == 1u);
  BOOST_TEST_REQUIRE(p.ok(), message_of(p));
  BOOST_TEST(p.state.status == sandbox_status::paused);
  auto h = history_of(*w.log, id);
  BOOST_TEST(h.problem.empty(), h.problem);
  BOOST_TEST(h.duplicates == 0u);
  BOOST_TEST(type_names(h.events) == k_pause_history, boost::test_tools::per_element());
  auto r = call(w, id, cmd::resume{}, ac::reply_when::durable);
  BOOST_TEST_REQUIRE(r.ok(), message_of(r));
  BOOST_TEST(r.own_sequence == 6u);
}

// A batch that lands after the client gave up (and after the actor appended it again) is a
// second, identical copy: every reader keeps the first.
BOOST_AUTO_TEST_CASE(an_append_that_lands_late_leaves_an_identical_duplicate_only) {
  world w;
  w.log->hold_late_writes();
  w.start();
  auto id = w.create();
  w.log->fail_next(append_fault::maybe_stored_late, holding<ev::pause_requested>());
  auto p = call(w, id, cmd::pause{}, ac::reply_when::durable);
  BOOST_TEST_REQUIRE(p.ok(), message_of(p));
  auto d = call(w, id, cmd::remove{});
  BOOST_TEST_REQUIRE(d.ok(), message_of(d));
  w.log->release_late_writes(); // the first try lands now, after delete_requested and deleted
  BOOST_REQUIRE(eventually([&] { return w.log->landed_late() == 1u; }));
  auto h = history_of(*w.log, id);
  BOOST_TEST(h.duplicates == 1u);
  BOOST_TEST(h.problem.empty(), h.problem);
  const auto live = w.plane->get(id, "acme");
  BOOST_REQUIRE(live.ok());
  BOOST_TEST((live.state == fold(h, id)));
  w.restart();
  auto after = w.plane->get(id, "acme");
  BOOST_REQUIRE(after.ok());
  BOOST_TEST((after.state == live.state));
  BOOST_TEST(after.state.status == sandbox_status::deleted);
}

// The log stays down: the caller learns the outcome is unknown, later commands are refused
// (not decided on a state that may be wrong), and the command takes effect once the log
// is back.
BOOST_AUTO_TEST_CASE(while_the_log_is_down_the_outcome_is_unknown_and_later_commands_wait) {
  world w;
  w.start();
  auto id = w.create();
  w.log->fail_all(append_fault::maybe_stored_lost);
  auto p = call(w, id, cmd::pause{});
  BOOST_TEST_REQUIRE(!p.ok());
  BOOST_TEST(p.failure->code == ev::errc::unavailable);
  BOOST_TEST(
    contains(p.failure->message, "outcome of the command on sandbox " + id + " is unknown"),
    p.failure->message);
  auto t = call(w, id, cmd::set_timeout{}, ac::reply_when::durable);
  BOOST_TEST_REQUIRE(!t.ok());
  BOOST_TEST(t.failure->code == ev::errc::unavailable);
  BOOST_TEST(contains(t.failure->message, "not known yet"), t.failure->message);
  BOOST_TEST(w.status(id) == sandbox_status::running); // the durable state
  BOOST_TEST(eventually([&] { return w.log->injected(append_fault::maybe_stored_lost) >= 3u; }));

  w.log->fail_all(append_fault::none);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::paused; }));
  auto h = history_of(*w.log, id);
  BOOST_TEST(h.problem.empty(), h.problem);
  BOOST_TEST(type_names(h.events) == k_pause_history, boost::test_tools::per_element());
  auto r = call(w, id, cmd::resume{}, ac::reply_when::durable);
  BOOST_TEST_REQUIRE(r.ok(), message_of(r));
  BOOST_TEST(r.own_sequence == h.events.size() + 1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(results_survive_a_failed_append)

BOOST_AUTO_TEST_CASE(a_failed_append_of_a_runtime_result_ends_with_the_sandbox_settled) {
  for (auto fault : {append_fault::not_stored, append_fault::maybe_stored_lost,
                     append_fault::maybe_stored_written}) {
    BOOST_TEST_CONTEXT("fault " << to_string(fault)) {
      world w;
      auto& plane = w.start();
      const auto durable = ac::reply_when::durable;
      w.log->fail_next(fault, holding<ev::started>());
      auto c = plane.call("", user(cmd::create{spec()}), durable);
      BOOST_TEST_REQUIRE(c.ok(), message_of(c));
      const auto id = c.state.sandbox_id;
      BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::running; }));
      w.log->fail_next(fault, holding<ev::paused>());
      BOOST_TEST_REQUIRE(call(w, id, cmd::pause{}, durable).ok());
      BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::paused; }));
      w.log->fail_next(fault, holding<ev::resumed>());
      BOOST_TEST_REQUIRE(call(w, id, cmd::resume{}, durable).ok());
      BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::running; }));
      w.log->fail_next(fault, holding<ev::deleted>());
      BOOST_TEST_REQUIRE(call(w, id, cmd::remove{}, durable).ok());
      BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::deleted; }));
      BOOST_TEST(w.log->injected(fault) == 4u);
      auto h = history_of(*w.log, id);
      BOOST_TEST(h.problem.empty(), h.problem);
      auto expected = k_pause_history;
      expected.insert(expected.end(),
                      {"resume_requested", "resumed", "delete_requested", "deleted"});
      BOOST_TEST(type_names(h.events) == expected, boost::test_tools::per_element());
      // Each step ran once (create and start, pause, resume, remove): the result was
      // recorded again, the runtime not acted on again.
      BOOST_TEST(w.driver.lifecycle_calls.load() == 5);
      BOOST_TEST(!w.hollow.inspect(id).ok());
    }
  }
}

// A settled reply waits for the step's outcome; when that cannot be recorded yet, the
// caller is told its command is recorded (not that nothing changed).
BOOST_AUTO_TEST_CASE(a_settled_reply_whose_step_outcome_is_not_recorded_yet_says_so) {
  world w;
  auto& plane = w.start();
  w.log->fail_next(append_fault::not_stored, holding<ev::started>());
  auto c = plane.call("", user(cmd::create{spec()}), ac::reply_when::settled);
  BOOST_TEST_REQUIRE(!c.ok());
  BOOST_TEST(c.failure->code == ev::errc::unavailable);
  BOOST_TEST(contains(c.failure->message, "the command is recorded"), c.failure->message);
  auto listed = w.hollow.list();
  BOOST_REQUIRE(listed.ok() && listed->size() == 1u);
  const auto id = listed->front().id;
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::running; }));
}

BOOST_AUTO_TEST_CASE(a_failed_step_whose_failure_could_not_be_appended_ends_failed) {
  world w;
  w.start();
  auto id = w.create();
  w.driver.fail_pause = true;
  w.log->fail_next(append_fault::not_stored, holding<ev::failed>());
  BOOST_TEST_REQUIRE(call(w, id, cmd::pause{}, ac::reply_when::durable).ok());
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::failed; }));
  BOOST_TEST(w.log->injected(append_fault::not_stored) == 1u);
  auto h = history_of(*w.log, id);
  BOOST_REQUIRE(!h.events.empty());
  BOOST_TEST(ev::type_name(h.events.back().body) == "failed");
}

// A lost exec_finished kept the exec "in flight" for good, and with it the idle timer off.
BOOST_AUTO_TEST_CASE(a_lost_exec_finished_is_recorded_and_the_idle_timer_fires_after_it) {
  world w;
  w.start();
  auto id = w.create(idle_spec(10s, ev::idle_action::pause_sandbox));
  w.log->fail_next(append_fault::not_stored, holding<ev::exec_finished>());
  cmd::exec x;
  x.exec_id = "x1";
  x.argv = {"echo", "hello"};
  BOOST_TEST_REQUIRE(call(w, id, x, ac::reply_when::durable).ok());
  auto finished = [&] {
    for (const auto& e : history_of(*w.log, id).events)
      if (std::holds_alternative<ev::exec_finished>(e.body))
        return true;
    return false;
  };
  BOOST_TEST(eventually(finished));
  BOOST_TEST(w.log->injected(append_fault::not_stored) == 1u);
  auto live = w.plane->get(id, "acme");
  BOOST_REQUIRE(live.ok());
  BOOST_TEST(live.state.execs_in_flight.empty());
  w.clock.advance(11s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::paused; }));
}

BOOST_AUTO_TEST_CASE(a_timer_firing_whose_append_failed_is_decided_again) {
  world w;
  w.start();
  auto id = w.create(idle_spec(10s, ev::idle_action::delete_sandbox));
  w.log->fail_next(append_fault::not_stored, holding<ev::delete_requested>());
  w.clock.advance(11s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::deleted; }));
  BOOST_TEST(w.log->injected(append_fault::not_stored) == 1u);
  auto h = history_of(*w.log, id);
  BOOST_TEST(h.problem.empty(), h.problem);
  BOOST_TEST(type_names(h.events) ==
               (std::vector<std::string>{"created", "started", "delete_requested", "deleted"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(recovery_agrees)

// Whatever became of an append of unknown fate, the live actor's state is the fold of the
// log (first copies), and a restarted node rebuilds the same state.
BOOST_AUTO_TEST_CASE(recovery_and_the_live_actor_agree_on_appends_of_unknown_fate) {
  for (auto fault : {append_fault::maybe_stored_written, append_fault::maybe_stored_lost,
                     append_fault::maybe_stored_late}) {
    BOOST_TEST_CONTEXT("fault " << to_string(fault)) {
      world w;
      w.log->set_late_by(std::chrono::milliseconds(20));
      w.start();
      std::vector<std::string> ids;
      for (int i = 0; i < 3; ++i)
        ids.push_back(w.create());
      w.log->fail_next(fault, holding<ev::pause_requested>());
      BOOST_TEST_REQUIRE(call(w, ids[0], cmd::pause{}).ok());
      w.log->fail_next(fault, holding<ev::exec_started>());
      cmd::exec x;
      x.exec_id = "x1";
      x.argv = {"echo", "hi"};
      BOOST_TEST_REQUIRE(call(w, ids[1], x, ac::reply_when::durable).ok());
      w.log->fail_next(fault, holding<ev::delete_requested>());
      BOOST_TEST_REQUIRE(call(w, ids[2], cmd::remove{}).ok());
      BOOST_TEST(w.log->injected(fault) == 3u);
      BOOST_REQUIRE(eventually([&] {
        auto h = history_of(*w.log, ids[1]);
        return !h.events.empty() && ev::type_name(h.events.back().body) == "exec_finished";
      }));
      // Late copies are written 20 ms after the failure, maybe after later commands landed.
      if (fault == append_fault::maybe_stored_late)
        BOOST_REQUIRE(eventually([&] { return w.log->landed_late() == 3u; }));
      std::vector<ac::sandbox_state> live;
      for (const auto& id : ids) {
        auto h = history_of(*w.log, id);
        BOOST_TEST(h.problem.empty(), h.problem);
        auto g = w.plane->get(id, "acme");
        BOOST_REQUIRE(g.ok());
        BOOST_TEST((g.state == fold(h, id)), id);
        live.push_back(g.state);
      }
      w.restart();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        auto g = w.plane->get(ids[i], "acme");
        BOOST_REQUIRE(g.ok());
        BOOST_TEST((g.state == live[i]), ids[i]);
      }
    }
  }
}

// Recovery's own append (the outcome of an interrupted step) fails: it is appended again,
// and recovery's view is the log's.
BOOST_AUTO_TEST_CASE(recovery_appends_the_outcome_of_an_interrupted_step_again) {
  for (auto fault : {append_fault::not_stored, append_fault::maybe_stored_lost,
                     append_fault::maybe_stored_written}) {
    BOOST_TEST_CONTEXT("fault " << to_string(fault)) {
      world w;
      const auto now = w.clock.now();
      auto s = ac::initial_state("sb-pausing");
      for (auto [body, system] : {std::pair<ac::command_body, bool>{cmd::create{spec()}, false},
                                  {cmd::runtime_started{}, true},
                                  {cmd::pause{}, false}}) {
        auto c = system ? ac::system_command(s, std::move(body)) : user(std::move(body));
        auto d = ac::decide(s, c, now);
        BOOST_REQUIRE(d.ok());
        for (const auto& e : d.emitted()) {
          s = ac::evolve(s, e);
          BOOST_REQUIRE(w.log->append({{e.sandbox_id, ev::encode(e)}}).get().ok());
        }
      }
      BOOST_REQUIRE(w.hollow.create(ac::create_request_of(s).value()).ok());
      BOOST_REQUIRE(w.hollow.start(s.sandbox_id).ok());
      w.log->fail_next(fault);
      w.log->fail_next(fault);
      w.start();
      BOOST_TEST(w.log->injected(fault) == 2u);
      BOOST_TEST(w.status("sb-pausing") == sandbox_status::paused);
      auto h = history_of(*w.log, "sb-pausing");
      BOOST_TEST(h.problem.empty(), h.problem);
      BOOST_TEST(h.duplicates == (fault == append_fault::maybe_stored_written ? 2u : 0u));
      auto live = w.plane->get("sb-pausing", "acme");
      BOOST_REQUIRE(live.ok());
      BOOST_TEST((live.state == fold(h, "sb-pausing")));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
