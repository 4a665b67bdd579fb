// The actor system with the embedded file log and the hollow driver: persist-then-reply,
// one command at a time per sandbox, idempotent create, every timer, passivation with
// reactivation, recovery and snapshots.
#define BOOST_TEST_MODULE control_plane
#include <boost/test/unit_test.hpp>

#include "actors/runtime_steps.hpp"
#include "tests/actors/actor_world.hpp"
#include "tests/support/test_seed.hpp"

#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <random>

using namespace sandboxd::test;
using sandboxd::actors::sandbox_status;
namespace cmd = sandboxd::actors::cmd;

namespace {

bool has_sequence_prefix(const std::vector<ev::event>& evs, std::uint64_t upto) {
  for (std::uint64_t i = 0; i < upto; ++i)
    if (i >= evs.size() || evs[i].sequence != i + 1)
      return false;
  return true;
}

const std::vector<std::string> k_running{"created", "started", "command_rejected"};
const std::vector<std::string> k_paused{"created", "started",         "pause_requested",
                                        "paused",  "storage_sampled", "command_rejected"};

} // namespace

BOOST_AUTO_TEST_SUITE(persist_then_reply)

BOOST_AUTO_TEST_CASE(reply_comes_after_the_commands_events_are_in_the_log) {
  world w;
  auto& plane = w.start();
  std::promise<bool> seen;
  plane.submit("", user(cmd::create{spec()}), ac::reply_when::durable, [&](ac::command_reply r) {
    // Checked inside the reply: the events it reports must already be readable.
    seen.set_value(r.ok() &&
                   has_sequence_prefix(events_of(*w.log, r.state.sandbox_id), r.state.sequence));
  });
  BOOST_TEST(seen.get_future().get());
  auto id = w.create();
  BOOST_TEST(w.status(id) == sandbox_status::running);
  auto info = w.hollow.inspect(id);
  BOOST_REQUIRE(info.ok());
  BOOST_TEST(info->status == runtime::sandbox_status::running);
  auto evs = events_of(*w.log, id);
  BOOST_REQUIRE(evs.size() == 2u);
  BOOST_TEST(ev::type_name(evs[0].body) == "created");
  BOOST_TEST(ev::type_name(evs[1].body) == "started");
}

BOOST_AUTO_TEST_CASE(failed_append_yields_an_error_reply_and_no_runtime_step) {
  world w;
  auto& plane = w.start();
  w.log->fail_all(append_fault::not_stored);
  auto r = plane.call("", user(cmd::create{spec()}));
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failure->code == ev::errc::unavailable);
  BOOST_TEST(w.driver.lifecycle_calls.load() == 0);
  BOOST_TEST(w.hollow.list().value().empty());

  w.log->fail_all(append_fault::none);
  auto id = w.create();
  const int calls = w.driver.lifecycle_calls.load();
  w.log->fail_all(append_fault::not_stored);
  auto p = plane.call(id, user(cmd::pause{}));
  BOOST_REQUIRE(!p.ok());
  BOOST_TEST(p.failure->code == ev::errc::unavailable);
  BOOST_TEST(w.driver.lifecycle_calls.load() == calls);
  BOOST_TEST(w.hollow.inspect(id)->status == runtime::sandbox_status::running);
  w.log->fail_all(append_fault::none);
  BOOST_TEST(w.status(id) == sandbox_status::running);
  auto again = plane.call(id, user(cmd::pause{}));
  BOOST_REQUIRE(again.ok());
  BOOST_TEST(again.state.status == sandbox_status::paused);
  BOOST_TEST(w.hollow.inspect(id)->status == runtime::sandbox_status::paused_filesystem);
}

BOOST_AUTO_TEST_CASE(a_rejected_command_is_recorded_before_its_error_reply) {
  world w;
  auto& plane = w.start();
  auto id = w.create();
  auto r = plane.call(id, user(cmd::resume{}));
  BOOST_REQUIRE(!r.ok());
  BOOST_TEST(r.failure->code == ev::errc::conflict);
  auto evs = events_of(*w.log, id);
  BOOST_REQUIRE(!evs.empty());
  BOOST_TEST(ev::type_name(evs.back().body) == "command_rejected");
}

BOOST_AUTO_TEST_CASE(a_failed_runtime_step_becomes_a_failed_event) {
  world w;
  auto& plane = w.start();
  auto id = w.create();
  w.driver.fail_pause = true;
  auto r = plane.call(id, user(cmd::pause{}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::failed);
  BOOST_TEST(r.state.failed_step == ev::runtime_step::pausing);
  BOOST_TEST(r.state.failure_reason.find("injected pause failure") != std::string::npos);
  BOOST_TEST(ev::type_name(events_of(*w.log, id).back().body) == "failed");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(one_at_a_time)

BOOST_AUTO_TEST_CASE(concurrent_commands_for_one_sandbox_are_decided_one_at_a_time) {
  world w;
  w.driver.slow_ms = 1;
  auto& plane = w.start();
  auto id = w.create();
  constexpr int k_threads = 6, k_each = 40;
  const auto seed = test_seed("concurrent_commands_for_one_sandbox");
  std::atomic<int> pending{k_threads * k_each};
  std::mutex mu;
  std::vector<std::uint64_t> accepted_sequences;
  std::promise<void> all_done;
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + static_cast<std::uint64_t>(t));
      for (int i = 0; i < k_each; ++i) {
        ac::command_body body;
        switch (rng() % 4) {
        case 0:
          body = cmd::pause{};
          break;
        case 1:
          body = cmd::resume{};
          break;
        case 2:
          body = cmd::set_timeout{};
          break;
        default:
          body = cmd::snapshot{
            "snap-00000000000000a1", "op-" + std::to_string(t) + "-" + std::to_string(i), "", {}};
        }
        plane.submit(id, user(std::move(body)), ac::reply_when::durable, [&](ac::command_reply r) {
          if (r.ok()) {
            std::lock_guard l(mu);
            accepted_sequences.push_back(r.state.sequence);
          }
          if (--pending == 0)
            all_done.set_value();
        });
      }
    });
  for (auto& t : threads)
    t.join();
  all_done.get_future().wait();
  BOOST_TEST(!w.driver.overlapped.load());
  // Every accepted command saw a state after its own events: no two share one.
  std::sort(accepted_sequences.begin(), accepted_sequences.end());
  BOOST_TEST((std::adjacent_find(accepted_sequences.begin(), accepted_sequences.end()) ==
              accepted_sequences.end()));
  BOOST_TEST(!accepted_sequences.empty());
  // The log holds one dense history, and the actor's state is its fold.
  BOOST_REQUIRE(eventually([&] {
    auto s = w.status(id);
    return s == sandbox_status::running || s == sandbox_status::paused;
  }));
  auto evs = events_of(*w.log, id);
  ac::sandbox_state folded = ac::initial_state(id);
  for (std::size_t i = 0; i < evs.size(); ++i) {
    BOOST_REQUIRE(evs[i].sequence == i + 1);
    folded = ac::evolve(folded, evs[i]);
  }
  auto now = plane.get(id, "acme");
  BOOST_REQUIRE(now.ok());
  BOOST_TEST(now.state.sequence == folded.sequence);
  BOOST_TEST((now.state == folded));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(idempotent_create)

BOOST_AUTO_TEST_CASE(a_create_repeating_a_client_request_id_returns_the_first_sandbox) {
  world w;
  auto& plane = w.start();
  auto first = w.create(spec("req-1"));
  auto second = plane.call("", user(cmd::create{spec("req-1")}));
  BOOST_REQUIRE(second.ok());
  BOOST_TEST(second.state.sandbox_id == first);
  BOOST_TEST(second.state.status == sandbox_status::running);
  int created = 0;
  for (const auto& e : events_of(*w.log, first))
    created += std::holds_alternative<ev::created>(e.body);
  BOOST_TEST(created == 1);
  auto other_tenant = plane.call("", user(cmd::create{spec("req-1")}, "globex"));
  BOOST_REQUIRE(other_tenant.ok());
  BOOST_TEST(other_tenant.state.sandbox_id != first);
  BOOST_TEST(w.hollow.list().value().size() == 2u);

  auto& again = w.restart();
  auto third = again.call("", user(cmd::create{spec("req-1")}));
  BOOST_REQUIRE(third.ok());
  BOOST_TEST(third.state.sandbox_id == first);
  BOOST_TEST(w.hollow.list().value().size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(timers)

BOOST_AUTO_TEST_CASE(idle_timeout_pauses_a_running_sandbox) {
  world w;
  w.start();
  auto id = w.create(idle_spec(10s, ev::idle_action::pause_sandbox));
  ev::sandbox_timeouts probe;
  probe.idle_timeout = 9s;
  auto probe_id = w.create(probe_spec(probe));
  w.clock.advance(9s);
  BOOST_TEST(after_due_timers(w, probe_id, id, cmd::resume{}) == k_running,
             boost::test_tools::per_element());
  w.clock.advance(2s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::paused; }));
  auto evs = events_of(*w.log, id);
  bool idle_pause = false;
  for (const auto& e : evs)
    if (auto* p = std::get_if<ev::pause_requested>(&e.body))
      idle_pause = p->reason == ev::pause_reason::idle_timeout && e.principal == "system";
  BOOST_TEST(idle_pause);
}

BOOST_AUTO_TEST_CASE(idle_timeout_deletes_when_the_policy_says_delete) {
  world w;
  w.start();
  auto id = w.create(idle_spec(10s, ev::idle_action::delete_sandbox));
  w.clock.advance(11s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::deleted; }));
  BOOST_TEST(!w.hollow.inspect(id).ok());
}

BOOST_AUTO_TEST_CASE(maximum_lifetime_deletes_the_sandbox) {
  world w;
  w.start();
  auto s = spec();
  s.timeouts.max_lifetime = 100s;
  auto id = w.create(s);
  ev::sandbox_timeouts probe;
  probe.max_lifetime = 99s;
  auto probe_id = w.create(probe_spec(probe));
  BOOST_REQUIRE(w.plane->call(id, user(cmd::pause{})).ok());
  w.clock.advance(99s);
  BOOST_TEST(after_due_timers(w, probe_id, id, cmd::pause{}) == k_paused,
             boost::test_tools::per_element());
  w.clock.advance(2s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::deleted; }));
  bool by_lifetime = false;
  for (const auto& e : events_of(*w.log, id))
    if (auto* d = std::get_if<ev::delete_requested>(&e.body))
      by_lifetime = d->reason == ev::delete_reason::lifetime;
  BOOST_TEST(by_lifetime);
}

BOOST_AUTO_TEST_CASE(retention_deletes_a_sandbox_paused_too_long) {
  world w;
  w.start();
  auto s = spec();
  s.timeouts.paused_retention = 30s;
  auto id = w.create(s);
  ev::sandbox_timeouts probe;
  probe.paused_retention = 29s;
  auto probe_id = w.create(probe_spec(probe));
  w.clock.advance(100s); // running time does not count
  BOOST_REQUIRE(w.plane->call(id, user(cmd::pause{})).ok());
  BOOST_REQUIRE(w.plane->call(probe_id, user(cmd::pause{})).ok());
  w.clock.advance(29s);
  BOOST_TEST(after_due_timers(w, probe_id, id, cmd::pause{}) == k_paused,
             boost::test_tools::per_element());
  w.clock.advance(2s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::deleted; }));
  bool by_retention = false;
  for (const auto& e : events_of(*w.log, id))
    if (auto* d = std::get_if<ev::delete_requested>(&e.body))
      by_retention = d->reason == ev::delete_reason::retention;
  BOOST_TEST(by_retention);
}

BOOST_AUTO_TEST_CASE(storage_is_sampled_at_pause_and_at_every_interval) {
  world w;
  w.options.storage_sample_interval = 60s;
  w.start();
  auto id = w.create();
  BOOST_REQUIRE(w.hollow.write_file(id, "/data.bin", std::string(5000, 'x'), 0644).ok());
  auto samples = [&] {
    std::vector<std::uint64_t> out;
    for (const auto& e : events_of(*w.log, id))
      if (auto* s = std::get_if<ev::storage_sampled>(&e.body))
        out.push_back(s->writable_layer_bytes);
    return out;
  };
  w.clock.advance(61s);
  BOOST_REQUIRE(eventually([&] { return samples().size() == 1; }));
  BOOST_TEST(samples()[0] >= 5000u);
  BOOST_REQUIRE(w.plane->call(id, user(cmd::pause{})).ok());
  auto evs = events_of(*w.log, id);
  BOOST_REQUIRE(evs.size() >= 2u);
  BOOST_TEST(ev::type_name(evs[evs.size() - 2].body) == "paused");
  BOOST_TEST(ev::type_name(evs.back().body) == "storage_sampled");
  w.clock.advance(61s); // paused sandboxes are sampled too
  BOOST_TEST(eventually([&] { return samples().size() == 3; }));
}

BOOST_AUTO_TEST_CASE(timers_survive_a_restart) {
  world w;
  w.start();
  auto s = spec();
  s.timeouts.max_lifetime = 100s;
  auto id = w.create(s);
  auto s2 = spec();
  s2.timeouts.idle_timeout = 50s;
  auto idle_id = w.create(s2);
  w.restart();
  BOOST_TEST(w.status(id) == sandbox_status::running);
  w.clock.advance(101s);
  BOOST_TEST(eventually([&] { return w.status(id) == sandbox_status::deleted; }));
  BOOST_TEST(eventually([&] { return w.status(idle_id) == sandbox_status::paused; }));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(passivation)

BOOST_AUTO_TEST_CASE(idle_paused_sandboxes_are_passivated_and_reactivated_from_the_log) {
  world w;
  w.options.passivate_after = 20ms;
  auto& plane = w.start();
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(w.create());
    BOOST_REQUIRE(plane.call(ids.back(), user(cmd::pause{})).ok());
  }
  auto gone = w.create();
  BOOST_REQUIRE(plane.call(gone, user(cmd::remove{})).ok());
  auto running = w.create();
  BOOST_REQUIRE(eventually([&] { return plane.stats().dormant == 21; }));
  BOOST_TEST(plane.stats().active == 1u); // the running one stays
  auto before = events_of(*w.log, ids[3]);
  auto r = plane.call(ids[3], user(cmd::resume{}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::running);
  BOOST_TEST(r.state.sequence == before.size() + 2); // resume_requested, resumed
  BOOST_TEST((r.state.created_at == ac::evolve(ac::initial_state(ids[3]), before[0]).created_at));
  BOOST_TEST(plane.stats().active >= 2u);
  auto d = plane.call(gone, user(cmd::pause{}));
  BOOST_REQUIRE(!d.ok());
  BOOST_TEST(d.failure->code == ev::errc::not_found);
  BOOST_TEST(w.status(running) == sandbox_status::running);
}

// A read may return fewer records than asked for (a Kafka fetch brings what it brings).
BOOST_AUTO_TEST_CASE(a_sandbox_is_reactivated_from_reads_that_return_one_record_each) {
  world w;
  w.options.passivate_after = 20ms;
  auto& plane = w.start();
  auto id = w.create();
  for (int i = 0; i < 3; ++i) {
    BOOST_REQUIRE(plane.call(id, user(cmd::pause{})).ok());
    BOOST_REQUIRE(plane.call(id, user(cmd::resume{})).ok());
  }
  BOOST_REQUIRE(plane.call(id, user(cmd::pause{})).ok());
  const auto before = plane.get(id, "acme");
  BOOST_REQUIRE(before.ok());
  BOOST_REQUIRE(eventually([&] { return plane.stats().dormant == 1; }));
  w.log->limit_reads(1);
  auto r = plane.call(id, user(cmd::resume{}));
  BOOST_TEST_REQUIRE(r.ok(), r.failure->message);
  BOOST_TEST(r.state.sequence == before.state.sequence + 2);
  BOOST_TEST((r.state.created_at == before.state.created_at));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(driver_never_blocks)

// The hollow driver's steps and samples run on the actors' threads: the same events, in the
// same order, and the same replies as through the pool.
BOOST_AUTO_TEST_CASE(steps_on_the_actors_threads_persist_then_reply_as_through_the_pool) {
  world w;
  w.options.driver_never_blocks = true;
  w.options.storage_sample_interval = 60s;
  auto& plane = w.start();
  auto id = w.create();
  BOOST_TEST(w.hollow.inspect(id)->status == runtime::sandbox_status::running);
  BOOST_REQUIRE(w.hollow.write_file(id, "/data.bin", std::string(5000, 'x'), 0644).ok());
  w.clock.advance(61s);
  BOOST_REQUIRE(eventually([&] {
    auto evs = events_of(*w.log, id);
    return ev::type_name(evs.back().body) == "storage_sampled";
  }));
  auto p = plane.call(id, user(cmd::pause{}));
  BOOST_REQUIRE(p.ok());
  BOOST_TEST(p.state.status == sandbox_status::paused);
  BOOST_TEST(w.hollow.inspect(id)->status == runtime::sandbox_status::paused_filesystem);
  auto r = plane.call(id, user(cmd::resume{}));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.state.status == sandbox_status::running);
  w.driver.fail_pause = true;
  auto f = plane.call(id, user(cmd::pause{}));
  BOOST_REQUIRE(f.ok());
  BOOST_TEST(f.state.status == sandbox_status::failed);
  auto d = plane.call(id, user(cmd::remove{}));
  BOOST_REQUIRE(d.ok());
  BOOST_TEST(d.state.status == sandbox_status::deleted);
  BOOST_TEST(!w.hollow.inspect(id).ok());
  std::vector<std::string> types;
  for (const auto& e : events_of(*w.log, id))
    types.emplace_back(ev::type_name(e.body));
  const std::vector<std::string> expected{"created",          "started",          "storage_sampled",
                                          "pause_requested",  "paused",           "storage_sampled",
                                          "resume_requested", "resumed",          "pause_requested",
                                          "failed",           "delete_requested", "deleted"};
  BOOST_TEST(types == expected, boost::test_tools::per_element());
  BOOST_TEST(!w.driver.overlapped.load());
}

// A driver whose calls can wait (here the hollow driver with latency, as a real runtime's
// do) is never called on the actors' threads: the option is refused, naming the driver.
BOOST_AUTO_TEST_CASE(a_driver_that_can_block_is_refused) {
  world w;
  runtime::hollow_driver slow(
    runtime::hollow_options{w.dir / "slow", std::chrono::microseconds(500)});
  BOOST_TEST(w.hollow.never_blocks());
  BOOST_TEST(!slow.never_blocks());
  w.options.driver = &slow;
  w.options.driver_never_blocks = true;
  std::string message;
  try {
    w.start();
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("hollow driver's calls can block") != std::string::npos, message);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(hollow_driver_directory_cache)

// The hollow driver caches which sandboxes have a directory (for the control plane's
// steps); a directory planted behind its back after the cache was trusted is still seen.
// (Here rather than in tests/runtime: it guards what the actors rely on.)
BOOST_AUTO_TEST_CASE(a_directory_planted_after_the_listing_is_seen) {
  temp_dir dir("hollow-cache");
  runtime::hollow_driver d(runtime::hollow_options{dir / "runtime", {}});
  std::this_thread::sleep_for(60ms); // the listing is trusted from now on
  runtime::create_request req;
  req.id = "first";
  BOOST_REQUIRE(d.create(req).ok());
  BOOST_TEST(d.usage("first")->writable_bytes == 0u);
  std::filesystem::create_directories(dir / "runtime/sandboxes/planted/upper");
  std::filesystem::create_directories(dir / "runtime/sandboxes/first/upper");
  std::ofstream(dir / "runtime/sandboxes/first/upper/x", std::ios::binary) << "x";
  req.id = "planted";
  BOOST_TEST((d.create(req).code() == runtime::errc::conflict)); // seen at once
  std::this_thread::sleep_for(60ms);
  BOOST_TEST((d.create(req).code() == runtime::errc::conflict)); // and after a new listing
  std::filesystem::resize_file(dir / "runtime/sandboxes/first/upper/x", 4096);
  BOOST_TEST(d.usage("first")->writable_bytes >= 4096u);
  BOOST_REQUIRE(d.remove("first").ok());
  BOOST_TEST(!std::filesystem::exists(dir / "runtime/sandboxes/first"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(recovery)

BOOST_AUTO_TEST_CASE(interrupted_steps_are_finished_and_orphans_removed) {
  world w;
  const auto now = w.clock.now();
  // Histories as a crash would leave them: each sandbox stopped in a transitional state.
  auto append = [&](ac::sandbox_state& s, ac::command_body body, bool system) {
    auto c = system ? ac::system_command(s, std::move(body)) : user(std::move(body));
    auto d = ac::decide(s, c, now);
    BOOST_REQUIRE(d.ok());
    std::vector<ev::log_record> batch;
    for (const auto& e : d.emitted()) {
      s = ac::evolve(s, e);
      batch.push_back({e.sandbox_id, ev::encode(e)});
    }
    BOOST_REQUIRE(w.log->append(std::move(batch)).get().ok());
  };
  auto creating = ac::initial_state("sb-creating");
  append(creating, cmd::create{spec()}, false);
  auto pausing = ac::initial_state("sb-pausing");
  append(pausing, cmd::create{spec()}, false);
  append(pausing, cmd::runtime_started{}, true);
  append(pausing, cmd::pause{}, false);
  auto deleting = ac::initial_state("sb-deleting");
  append(deleting, cmd::create{spec()}, false);
  append(deleting, cmd::runtime_started{}, true);
  append(deleting, cmd::remove{}, false);
  for (auto* s : {&pausing, &deleting}) {
    BOOST_REQUIRE(w.hollow.create(ac::create_request_of(*s).value()).ok());
    BOOST_REQUIRE(w.hollow.start(s->sandbox_id).ok());
  }
  runtime::create_request orphan;
  orphan.id = "sb-orphan";
  BOOST_REQUIRE(w.hollow.create(orphan).ok());

  auto& plane = w.start();
  const auto& rep = plane.recovery();
  BOOST_TEST(rep.finished.size() == 3u);
  BOOST_TEST(rep.failed.empty());
  BOOST_REQUIRE(rep.orphans_removed.size() == 1u);
  BOOST_TEST(rep.orphans_removed[0] == "sb-orphan");
  BOOST_TEST(w.status("sb-creating") == sandbox_status::running);
  BOOST_TEST(w.status("sb-pausing") == sandbox_status::paused);
  BOOST_TEST(w.status("sb-deleting") == sandbox_status::deleted);
  std::set<std::string> in_runtime;
  auto listed = w.hollow.list();
  for (const auto& i : listed.value())
    in_runtime.insert(i.id);
  BOOST_TEST((in_runtime == std::set<std::string>{"sb-creating", "sb-pausing"}));
}

BOOST_AUTO_TEST_CASE(snapshot_plus_tail_replay_equals_a_full_replay) {
  world w;
  auto& plane = w.start();
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i)
    ids.push_back(w.create());
  for (int i = 0; i < 6; ++i)
    BOOST_REQUIRE(plane.call(ids[i], user(cmd::pause{})).ok());
  BOOST_TEST(plane.snapshot_now() > 0u);
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(plane.call(ids[i], user(cmd::resume{})).ok());
  BOOST_REQUIRE(plane.call(ids[11], user(cmd::remove{})).ok());
  temp_dir empty("actors-nosnap");
  std::uint64_t from_snapshot = 0;
  for (std::int32_t p = 0; p < w.log->partitions(); ++p) {
    auto with = ac::recover_partition(*w.log, w.options.data_dir + "/snapshots", p);
    auto full = ac::recover_partition(*w.log, empty.path(), p);
    from_snapshot += with.from_snapshot;
    BOOST_TEST(with.next_offset == full.next_offset);
    BOOST_TEST(with.events_replayed < full.events_replayed + (full.next_offset == 0));
    BOOST_REQUIRE(with.sandboxes.size() == full.sandboxes.size());
    for (const auto& [id, r] : full.sandboxes)
      BOOST_TEST((with.sandboxes.at(id) == r));
  }
  BOOST_TEST(from_snapshot == 12u);
  auto& again = w.restart();
  BOOST_TEST(again.recovery().from_snapshot == 12u);
  BOOST_TEST(w.status(ids[0]) == sandbox_status::running);
  BOOST_TEST(w.status(ids[5]) == sandbox_status::paused);
  BOOST_TEST(w.status(ids[11]) == sandbox_status::deleted);
}

BOOST_AUTO_TEST_SUITE_END()
