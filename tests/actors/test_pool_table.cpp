// test_pool_table.cpp — a warm pool's bookkeeping (actors/pool_table.hpp), pure: a ready
// sandbox is handed out once, the pool refills at its rate up to its target, grows with
// demand within its maximum and shrinks back, and retires what no claim can use.
#define BOOST_TEST_MODULE pool_table
#include <boost/test/unit_test.hpp>

#include "actors/pool_table.hpp"

#include <set>

using namespace sandboxd;
using namespace sandboxd::actors;
using namespace std::chrono_literals;

namespace {

const events::time_point t0{std::chrono::seconds(1'800'000'000)};

pool_settings settings(std::uint32_t size, std::uint32_t maximum, double rate) {
  pool_settings s;
  s.key = {"base", events::runtime_kind::crun, {512, 1000, 512, 10240}};
  s.size = size;
  s.maximum = maximum;
  s.refill_per_second = rate;
  return s;
}

// Starts every create the plan asks for and makes each one ready at once (ids p1, p2, ...).
struct pool_sim {
  pool_table table;
  events::time_point now = t0;
  int made = 0;

  explicit pool_sim(pool_settings s) : table(std::move(s), t0) {}

  pool_table::plan step(bool make = true) {
    auto p = table.next(now);
    if (make)
      for (std::uint32_t i = 0; i < p.create; ++i)
        table.made("p" + std::to_string(++made), "tpl-1", 40ms);
    return p;
  }
  // Steps every 10 ms for `d`.
  void run_for(events::nanoseconds d) {
    for (auto end = now + d; now < end; now += 10ms)
      step();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(pool_table_suite)

BOOST_AUTO_TEST_CASE(key_text_names_template_runtime_and_limits) {
  BOOST_TEST(to_string(settings(1, 1, 1).key) == "base/crun/m512/c1000/p512/d10240");
  BOOST_TEST(!check(settings(2, 4, 20)));
  BOOST_TEST(check(settings(4, 2, 20)).value().find("maximum 2 is below size 4") !=
             std::string::npos);
  BOOST_TEST(check(settings(1, 1, 0)).has_value());
  auto s = settings(1, 1, 1);
  s.key.template_name.clear();
  BOOST_TEST(check(s).has_value());
}

BOOST_AUTO_TEST_CASE(a_pool_fills_to_its_size_at_its_rate) {
  pool_sim sim(settings(10, 10, 20));
  auto first = sim.step();
  // One second's worth of tokens at most, and a bucket that starts with one.
  BOOST_TEST(first.create == 1u);
  sim.run_for(250ms);
  BOOST_TEST(sim.table.figures(sim.now).ready <= 7u); // 1 + 20/s x 0.25 s
  sim.run_for(1s);
  auto f = sim.table.figures(sim.now);
  BOOST_TEST(f.ready == 10u);
  BOOST_TEST(f.making == 0u);
  BOOST_TEST(sim.step().create == 0u, "a full pool makes nothing more");
}

BOOST_AUTO_TEST_CASE(a_short_pool_asks_to_be_woken_when_a_token_is_due) {
  pool_sim sim(settings(5, 5, 4));
  auto p = sim.step();
  BOOST_TEST(p.create == 1u);
  BOOST_TEST_REQUIRE(p.wake.has_value());
  BOOST_TEST((*p.wake > sim.now && *p.wake <= sim.now + 250ms));
}

BOOST_AUTO_TEST_CASE(a_ready_sandbox_is_handed_out_once) {
  pool_sim sim(settings(8, 8, 1000));
  sim.run_for(100ms);
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    auto id = sim.table.take("tpl-1", sim.now);
    BOOST_TEST_REQUIRE(id.has_value());
    BOOST_TEST(seen.insert(*id).second, "handed out twice: " << *id);
  }
  BOOST_TEST(!sim.table.take("tpl-1", sim.now).has_value(), "an empty pool is a miss");
  auto f = sim.table.figures(sim.now);
  BOOST_TEST(f.hits == 8u);
  BOOST_TEST(f.misses == 1u);
  // Refilled, the pool never hands out one of those again.
  sim.run_for(1s);
  for (int i = 0; i < 8; ++i) {
    auto id = sim.table.take("tpl-1", sim.now);
    BOOST_TEST_REQUIRE(id.has_value());
    BOOST_TEST(seen.insert(*id).second, "handed out twice: " << *id);
  }
}

BOOST_AUTO_TEST_CASE(a_sandbox_given_back_is_next_in_line) {
  pool_sim sim(settings(3, 3, 1000));
  sim.run_for(50ms);
  auto id = sim.table.take("tpl-1", sim.now);
  BOOST_TEST_REQUIRE(id.has_value());
  sim.table.give_back(*id, "tpl-1");
  BOOST_TEST((sim.table.take("tpl-1", sim.now) == id));
}

BOOST_AUTO_TEST_CASE(demand_grows_the_pool_within_its_maximum_and_it_shrinks_back) {
  pool_sim sim(settings(2, 6, 1000));
  sim.run_for(50ms);
  BOOST_TEST(sim.table.figures(sim.now).ready == 2u);
  // A burst of 10 claims: the target is size + demand, at most the maximum.
  for (int i = 0; i < 10; ++i)
    sim.table.take("tpl-1", sim.now);
  BOOST_TEST(sim.table.target(sim.now) == 6u);
  sim.run_for(1s);
  auto f = sim.table.figures(sim.now);
  BOOST_TEST(f.ready == 6u);
  BOOST_TEST(f.ready + f.making <= 6u);
  // The window passes: back to its size, the others retired oldest first.
  sim.now += k_demand_window;
  auto p = sim.step();
  BOOST_TEST(p.retire.size() == 4u);
  BOOST_TEST(sim.table.figures(sim.now).ready == 2u);
  BOOST_TEST(sim.table.figures(sim.now).retired == 4u);
}

BOOST_AUTO_TEST_CASE(ready_and_being_made_never_pass_the_maximum) {
  pool_sim sim(settings(4, 4, 1000));
  std::uint32_t started = 0;
  for (int round = 0; round < 3; ++round) {
    started += sim.step(false).create; // creates started, none answered
    for (int i = 0; i < 20; ++i)
      sim.table.take("tpl-1", sim.now); // misses: demand far above the maximum
    sim.now += 1s;
  }
  BOOST_TEST(started == 4u);
  BOOST_TEST(sim.table.figures(sim.now).making == 4u);
}

BOOST_AUTO_TEST_CASE(a_claim_for_other_template_content_is_a_miss_that_retires_nothing) {
  pool_sim sim(settings(2, 2, 1000));
  sim.run_for(50ms);
  // A tenant's own template of the same name: other content, never served from the pool.
  BOOST_TEST(!sim.table.take("tpl-tenant", sim.now).has_value());
  BOOST_TEST(sim.table.figures(sim.now).misses == 1u);
  auto p = sim.step(false);
  BOOST_TEST(p.retire.empty());
  BOOST_TEST(sim.table.figures(sim.now).ready == 2u);
  BOOST_TEST((sim.table.take("tpl-1", sim.now).has_value()), "the pool's own content serves");
}

BOOST_AUTO_TEST_CASE(sandboxes_of_a_rebuilt_templates_old_content_are_retired) {
  pool_sim sim(settings(2, 2, 1000));
  sim.run_for(50ms);
  // The template was rebuilt: its name stands for tpl-2 now.
  sim.table.set_content("tpl-2");
  auto p = sim.step(false);
  BOOST_TEST(p.retire.size() == 2u);
  BOOST_TEST(p.create == 2u);
  BOOST_TEST(!sim.table.take("tpl-1", sim.now).has_value(), "old content is never handed out");
}

BOOST_AUTO_TEST_CASE(a_create_started_before_a_rebuild_is_retired_when_made) {
  pool_sim sim(settings(2, 2, 1000));
  auto p = sim.step(false); // two creates started, of tpl-1 (one token each)
  sim.now += 10ms;
  p = sim.step(false);
  BOOST_TEST(sim.table.figures(sim.now).making == 2u);
  sim.table.set_content("tpl-2"); // the template was rebuilt while they were being made
  sim.table.made("old-1", "tpl-1", 40ms);
  sim.table.made("new-1", "tpl-2", 40ms);
  BOOST_TEST(sim.table.figures(sim.now).ready == 1u);
  BOOST_TEST(!sim.table.take("tpl-1", sim.now).has_value());
  p = sim.step(false);
  BOOST_TEST(p.retire == std::vector<std::string>{"old-1"});
  BOOST_TEST(*sim.table.take("tpl-2", sim.now) == "new-1");
}

// A hit holds refills back k_claim_quiet while a sandbox is still ready (the claimed one's
// first exec runs alone), never longer, and not at all once nothing is ready.
BOOST_AUTO_TEST_CASE(a_hit_holds_refills_back_for_the_quiet_time_only) {
  pool_sim sim(settings(3, 3, 1000));
  sim.run_for(50ms);
  BOOST_TEST_REQUIRE(sim.table.figures(sim.now).ready == 3u);
  const auto hit = sim.now;
  BOOST_TEST(sim.table.take("tpl-1", sim.now).has_value());
  auto p = sim.step(false);
  BOOST_TEST(p.create == 0u, "a refill beside the claimed sandbox's first exec");
  BOOST_TEST_REQUIRE(p.wake.has_value());
  BOOST_TEST((*p.wake == hit + k_claim_quiet));
  // A second hit within the quiet time does not extend it.
  sim.now += k_claim_quiet / 2;
  BOOST_TEST(sim.table.take("tpl-1", sim.now).has_value());
  BOOST_TEST(sim.step(false).create == 0u);
  sim.now = hit + k_claim_quiet;
  p = sim.step(false);
  BOOST_TEST(p.create > 0u, "the refill starts when the quiet time ends");
}

BOOST_AUTO_TEST_CASE(with_nothing_ready_after_a_hit_the_refill_starts_at_once) {
  pool_sim sim(settings(1, 1, 1000));
  sim.run_for(50ms);
  BOOST_TEST(sim.table.take("tpl-1", sim.now).has_value());
  BOOST_TEST(sim.step(false).create == 1u);
}

BOOST_AUTO_TEST_CASE(failed_creates_are_counted_and_made_again) {
  pool_sim sim(settings(2, 2, 1000));
  auto p = sim.step(false);
  for (std::uint32_t i = 0; i < p.create; ++i)
    sim.table.not_made("runtime refused");
  auto f = sim.table.figures(sim.now);
  BOOST_TEST(f.failed == p.create);
  BOOST_TEST(f.last_error == "runtime refused");
  sim.now += 10ms;
  BOOST_TEST(sim.step(false).create > 0u);
  BOOST_TEST(sim.table.next(sim.now, false).create == 0u, "no create while backing off");
}

BOOST_AUTO_TEST_CASE(a_pool_set_to_nothing_retires_every_ready_sandbox) {
  pool_sim sim(settings(3, 3, 1000));
  sim.run_for(50ms);
  sim.table.reconfigure(settings(0, 0, 1000));
  auto p = sim.step();
  BOOST_TEST(p.retire.size() == 3u);
  BOOST_TEST(p.create == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
