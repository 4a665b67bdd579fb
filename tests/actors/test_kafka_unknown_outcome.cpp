// The actor system on Kafka (librdkafka's mock cluster) when the brokers answer slower
// than the append timeout: appends time out after the brokers stored them (their outcome
// is unknown). After commands that time out and commands that succeed, a restarted control
// plane rebuilds, for every sandbox, the state the acknowledged commands produced; each
// acknowledged command's own event is at its sequence and no sequence holds two events.
#define BOOST_TEST_MODULE kafka_unknown_outcome
#include <boost/test/unit_test.hpp>

#include "events/kafka_log.hpp"
#include "tests/actors/actor_harness.hpp"
#include "tests/support/kafka_log_options.hpp"
#include "tests/support/kafka_mock.hpp"
#include "tests/support/temp_dir.hpp"

#include <future>
#include <map>
#include <mutex>

using namespace sandboxd::test;
using sandboxd::actors::sandbox_status;
namespace cmd = sandboxd::actors::cmd;

namespace {

// An acknowledged command: the sandbox, its own event's sequence and type.
struct acknowledged {
  std::string sandbox_id;
  std::uint64_t sequence = 0;
  std::string type;
};

struct node {
  std::unique_ptr<ev::kafka_log> log;
  std::unique_ptr<ac::control_plane> plane;

  node(const ev::kafka_log_options& o, runtime::driver& driver, const std::string& data) {
    log = std::make_unique<ev::kafka_log>(o);
    ac::control_plane_options c;
    c.log = log.get();
    c.driver = &driver;
    c.data_dir = data;
    c.runtime_threads = 4;
    c.storage_sample_interval = ev::nanoseconds(0);
    c.snapshot_every_records = 0;
    plane = std::make_unique<ac::control_plane>(c);
  }
  ~node() {
    plane.reset();
    log.reset();
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_restart_after_timed_out_appends_rebuilds_what_acknowledged_commands_made) {
  kafka_mock_cluster mock;
  mock.create_topic("events", 4);
  auto o = mock_cluster_log(mock.bootstrap(), "events", 4);
  o.append_timeout = std::chrono::milliseconds(1000);
  temp_dir dir("actors-kafka");
  runtime::hollow_driver driver(runtime::hollow_options{dir / "runtime", {}});

  std::vector<acknowledged> acks;
  std::map<std::string, ac::sandbox_state> live;
  std::vector<std::string> ids;
  std::size_t unknown = 0, failed = 0;
  {
    node n(o, driver, dir / "data");
    for (int i = 0; i < 8; ++i) {
      auto r = n.plane->call("", user(cmd::create{spec()}), ac::reply_when::settled);
      BOOST_REQUIRE_MESSAGE(r.ok(), (r.failure ? r.failure->message : ""));
      ids.push_back(r.state.sandbox_id);
      acks.push_back({r.state.sandbox_id, r.own_sequence, "created"});
    }
    // Every broker answers 3 s late: appends time out after 1 s, stored all the same.
    for (int b = 1; b <= mock.brokers(); ++b)
      mock.set_rtt(b, 3000);
    std::mutex mu;
    std::vector<std::future<void>> replies;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      auto p = std::make_shared<std::promise<void>>();
      replies.push_back(p->get_future());
      const bool pause = i % 2 == 0;
      ac::command_body body = pause ? ac::command_body{cmd::pause{}} : cmd::remove{};
      n.plane->submit(ids[i], user(body), ac::reply_when::durable,
                      [&, p, pause](ac::command_reply r) {
                        std::lock_guard l(mu);
                        if (r.ok())
                          acks.push_back({r.state.sandbox_id, r.own_sequence,
                                          pause ? "pause_requested" : "delete_requested"});
                        else if (r.failure->message.find("unknown") != std::string::npos)
                          ++unknown;
                        else
                          ++failed;
                        p->set_value();
                      });
    }
    for (auto& f : replies)
      BOOST_REQUIRE(f.wait_for(std::chrono::minutes(2)) == std::future_status::ready);
    for (int b = 1; b <= mock.brokers(); ++b)
      mock.set_rtt(b, 0);
    // Commands that succeed (or are refused because the sandbox was deleted), each decided
    // after whatever the timed-out one became. While an earlier outcome is still unknown a
    // sandbox answers `unavailable`: the client retries.
    for (const auto& id : ids) {
      ev::sandbox_timeouts t;
      t.idle_timeout = std::chrono::hours(1);
      ac::command_reply r;
      BOOST_REQUIRE(eventually(
        [&] {
          r = n.plane->call(id, user(cmd::set_timeout{t}), ac::reply_when::settled);
          return r.ok() || r.failure->code != ev::errc::unavailable;
        },
        std::chrono::seconds(60)));
      if (r.ok())
        acks.push_back({id, r.own_sequence, "timeout_changed"});
      // The state to compare after the restart, once no runtime step is in flight (a
      // delete refused the timeout above with its step still running; the step's result
      // would land after the snapshot, before the restart).
      ac::command_reply g;
      BOOST_REQUIRE(eventually(
        [&] {
          g = n.plane->get(id, "acme");
          return g.ok() && !ac::step_in_flight(g.state);
        },
        std::chrono::seconds(60)));
      live[id] = g.state;
    }
  }
  BOOST_TEST_MESSAGE(acks.size() << " commands acknowledged, " << unknown
                                 << " answered 'outcome unknown', " << failed << " failed");
  // Without a timed-out append the rest would check nothing this test is for.
  BOOST_TEST(unknown > 0u, "no append timed out: the brokers' round trip was not injected");

  node again(o, driver, dir / "data");
  auto history = histories_of(*again.log);
  for (const auto& id : ids) {
    const auto& h = history[id];
    BOOST_TEST(h.problem.empty(), id << ": " << h.problem);
    auto g = again.plane->get(id, "acme");
    BOOST_REQUIRE(g.ok());
    BOOST_TEST((g.state == live[id]), id << ": " << ac::to_string(g.state.status)
                                         << " after the restart, " << ac::to_string(live[id].status)
                                         << " before");
  }
  for (const auto& a : acks) {
    const auto& evs = history[a.sandbox_id].events;
    BOOST_TEST_REQUIRE(a.sequence >= 1u);
    BOOST_TEST_REQUIRE(a.sequence <= evs.size(), a.sandbox_id << " acknowledged " << a.type);
    BOOST_TEST(ev::type_name(evs[a.sequence - 1].body) == a.type,
               a.sandbox_id << " sequence " << a.sequence);
  }
}
