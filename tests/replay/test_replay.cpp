// replay: a sandbox's history read back from a file log and folded reproduces, event by
// event, the states the state machine went through while the events were made; the bound
// (sequence, instant) picks the state at a point; state_fields shows what matters
// (status, limits, pause mode, writable bytes, execs in flight, deadlines) and diff_states
// names exactly the fields that changed.
#define BOOST_TEST_MODULE replay
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "events/file_log_reader.hpp"
#include "replay/replay_fold.hpp"
#include "replay/sandbox_history.hpp"
#include "replay/state_fields.hpp"
#include "tests/actors/machine_sim.hpp"
#include "tests/support/temp_dir.hpp"

#include <map>

using namespace sandboxd;
using namespace sandboxd::actors;
using namespace sandboxd::actors::testing;
using namespace std::chrono_literals;
using sandboxd::test::temp_dir;

namespace {

// A session: the events the machine made and the state after each (by sequence).
struct session {
  machine_sim sim;
  std::map<std::uint64_t, sandbox_state> states;
  std::map<std::uint64_t, events::time_point> times;

  void run(command_body body) {
    const auto before = sim.log.size();
    BOOST_REQUIRE(sim.apply(std::move(body)).ok());
    // apply evolves every emitted event at once: replay each one to know the state between.
    auto s = before == 0 ? initial_state(k_sandbox) : states.rbegin()->second;
    for (std::size_t i = before; i < sim.log.size(); ++i) {
      s = evolve(s, sim.log[i]);
      states[sim.log[i].sequence] = s;
      times[sim.log[i].sequence] = sim.log[i].occurred_at;
    }
    BOOST_REQUIRE(s == sim.state);
  }
};

session recorded_session() {
  session s;
  s.run(cmd::create{canonical_spec()});
  s.run(cmd::runtime_started{});
  s.run(cmd::exec{"exec-1", {"python3", "-c", "1"}, "/work", 10s});
  s.run(cmd::exec{"exec-2", {"sleep", "9"}, "/work", 0s});
  s.run(cmd::exec_finished{"exec-1", 0, 0, 2s, 10, 0, false});
  s.run(cmd::storage_sampled{65536});
  s.run(cmd::pause{events::pause_mode::memory});
  s.run(cmd::runtime_paused{123456});
  s.run(cmd::resume{});
  s.run(cmd::runtime_resumed{});
  s.run(cmd::pause{});
  s.run(cmd::runtime_paused{777});
  s.run(cmd::remove{});
  s.run(cmd::runtime_deleted{});
  return s;
}

// The session's events in a file log, interleaved with another sandbox's.
void write_log(const std::string& dir, const session& s) {
  events::file_log_options o;
  o.dir = dir;
  o.partitions = 1; // both sandboxes in one partition: the other's records must be skipped
  events::file_log log(o);
  for (const auto& e : s.sim.log) {
    auto other = e;
    other.sandbox_id = "sb_other";
    other.event_id = "sb_other:" + std::to_string(e.sequence);
    BOOST_REQUIRE(log
                    .append_and_wait({{other.sandbox_id, events::encode(other)},
                                      {e.sandbox_id, events::encode(e)}})
                    .ok());
  }
}

std::map<std::string, replay::field_value> by_name(const sandbox_state& s) {
  std::map<std::string, replay::field_value> m;
  for (auto& f : replay::state_fields(s))
    m.emplace(f.name, f.value);
  return m;
}

} // namespace

BOOST_AUTO_TEST_CASE(replay_reproduces_every_state_of_the_session) {
  const auto s = recorded_session();
  temp_dir dir("replay");
  write_log(dir / "log", s);
  events::file_log_reader log(dir / "log");
  auto history = replay::read_history(log, k_sandbox);
  BOOST_REQUIRE_EQUAL(history.size(), s.sim.log.size());
  BOOST_TEST(history[1].offset == 3); // every other record is sb_other's
  const auto steps = replay::fold_history(k_sandbox, std::move(history));
  BOOST_REQUIRE_EQUAL(steps.size(), s.states.size());
  for (const auto& step : steps) {
    BOOST_TEST_CONTEXT("sequence " << step.event.sequence) {
      BOOST_TEST((step.event == s.sim.log[step.event.sequence - 1]));
      BOOST_TEST((step.state == s.states.at(step.event.sequence)));
    }
  }
  BOOST_TEST((steps.back().state.status == sandbox_status::deleted));
  BOOST_TEST(replay::read_history(log, "sb_nobody").empty());
}

BOOST_AUTO_TEST_CASE(the_bound_picks_the_state_at_a_sequence_or_an_instant) {
  const auto s = recorded_session();
  temp_dir dir("replay-bound");
  write_log(dir / "log", s);
  events::file_log_reader log(dir / "log");
  const auto history = replay::read_history(log, k_sandbox);

  for (std::uint64_t n : {1u, 5u, 9u}) {
    const auto steps = replay::fold_history(k_sandbox, history, {n, std::nullopt});
    BOOST_REQUIRE_EQUAL(steps.size(), n);
    BOOST_TEST((steps.back().state == s.states.at(n)));
  }
  // At an instant between two events: the state after the earlier one.
  const auto t = s.times.at(8) + 1ns;
  BOOST_REQUIRE(s.times.at(9) > t);
  const auto at = replay::fold_history(k_sandbox, history, {std::nullopt, t});
  BOOST_TEST(at.back().event.sequence == 8u);
  BOOST_TEST((at.back().state == s.states.at(8)));
  // Before the sandbox existed: nothing.
  BOOST_TEST(replay::fold_history(k_sandbox, history, {std::nullopt, s.times.at(1) - 1ns}).empty());

  const auto all = replay::fold_history(k_sandbox, history);
  BOOST_TEST((replay::state_after(k_sandbox, all, 4) == s.states.at(4)));
  BOOST_TEST((replay::state_after(k_sandbox, all, 0).status == sandbox_status::absent));
}

BOOST_AUTO_TEST_CASE(a_gap_in_the_sequence_is_a_fault) {
  auto s = recorded_session();
  std::vector<replay::history_entry> history;
  for (const auto& e : s.sim.log)
    if (e.sequence != 3)
      history.push_back({0, static_cast<std::int64_t>(history.size()), e});
  BOOST_CHECK_THROW(replay::fold_history(k_sandbox, history), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(state_fields_show_limits_execs_pause_mode_and_deadlines) {
  const auto s = recorded_session();
  // After exec-2 started (sequence 4): running, two execs in flight, no idle deadline
  // (execs in flight), a lifetime deadline 1 h after creation.
  auto f = by_name(s.states.at(4));
  BOOST_TEST(std::get<std::string>(f.at("status")) == "running");
  BOOST_TEST(std::get<std::uint64_t>(f.at("limits.memory_mib")) == 512u);
  BOOST_TEST(std::get<std::uint64_t>(f.at("execs_in_flight")) == 2u);
  BOOST_TEST(std::get<std::string>(f.at("exec.exec-1")) == "in flight");
  BOOST_TEST(f.count("exec.exec-2") == 1u);
  BOOST_TEST(f.count("deadline.idle") == 0u);
  BOOST_TEST((std::get<events::time_point>(f.at("deadline.lifetime")) == s.times.at(1) + 1h));
  BOOST_TEST(std::get<std::string>(f.at("label.team")) == "ml");
  // Paused in memory with the runtime's figure (sequence 8); the retention timer runs.
  f = by_name(s.states.at(8));
  BOOST_TEST(std::get<std::string>(f.at("status")) == "paused");
  BOOST_TEST(std::get<std::string>(f.at("pause_mode")) == "memory");
  BOOST_TEST(std::get<std::uint64_t>(f.at("writable_layer_bytes")) == 123456u);
  BOOST_TEST((std::get<events::time_point>(f.at("deadline.retention")) == s.times.at(8) + 24h));
  // Before created: only the status, the sequence and the (zero) exec count.
  BOOST_TEST(replay::state_fields(initial_state(k_sandbox)).size() == 3u);
}

BOOST_AUTO_TEST_CASE(diff_names_exactly_the_fields_that_changed) {
  const auto s = recorded_session();
  BOOST_TEST(replay::diff_states(s.states.at(4), s.states.at(4)).empty());
  // 4 -> 5: exec-1 finished; its entry goes, the count drops, activity moves.
  auto d = replay::diff_states(s.states.at(4), s.states.at(5));
  std::map<std::string, replay::field_change> m;
  for (auto& c : d)
    m.emplace(c.name, c);
  BOOST_TEST(m.size() == 4u);
  BOOST_TEST(m.count("sequence") == 1u);
  BOOST_TEST(m.count("last_activity_at") == 1u);
  BOOST_TEST((m.at("execs_in_flight").before == replay::field_value{std::uint64_t{2}}));
  BOOST_TEST((m.at("execs_in_flight").after == replay::field_value{std::uint64_t{1}}));
  BOOST_TEST(m.at("exec.exec-1").before.has_value());
  BOOST_TEST(!m.at("exec.exec-1").after.has_value());
  // 6 -> 8 (pause in memory, paused): status, pause mode, writable bytes, status_since,
  // sequence, and the retention timer that starts.
  m.clear();
  for (auto& c : replay::diff_states(s.states.at(6), s.states.at(8)))
    m.emplace(c.name, c);
  BOOST_TEST((m.at("status").before == replay::field_value{std::string("running")}));
  BOOST_TEST((m.at("status").after == replay::field_value{std::string("paused")}));
  BOOST_TEST(m.count("pause_mode") == 1u);
  BOOST_TEST(m.count("writable_layer_bytes") == 1u);
  BOOST_TEST(!m.at("deadline.retention").before.has_value());
  BOOST_TEST(m.at("deadline.retention").after.has_value());
  BOOST_TEST(m.count("limits.memory_mib") == 0u);
}
