// The pure row logic: what events do to a `sandboxes` row and to the billing meters (a
// sandbox's, and a tenant template's).
#define BOOST_TEST_MODULE sandbox_row
#include <boost/test/unit_test.hpp>

#include "projections/billing_meter.hpp"
#include "projections/sandbox_row.hpp"
#include "tests/projections/lifecycle_stream.hpp"

using namespace std::chrono_literals;
using namespace sandboxd;
using namespace sandboxd::projections;
using sandboxd::test::sandbox_events;

namespace {

std::optional<sandbox_row> fold_all(const std::vector<events::event>& evs, std::size_t from,
                                    std::size_t to, std::optional<sandbox_row> row = {}) {
  sandbox_patch p;
  p.id = evs.front().sandbox_id;
  for (std::size_t i = from; i < to; ++i)
    fold(p, evs[i]);
  return apply_patch(std::move(row), p);
}

} // namespace

BOOST_AUTO_TEST_CASE(row_follows_the_lifecycle_in_any_batch_split) {
  sandbox_events s("sb-1", "acme", 1'000'000'000);
  s.created(2048, {{"team", "ml"}}).started().sampled(100).pause(events::pause_mode::memory, 300);
  auto evs = s.events();
  auto whole = fold_all(evs, 0, evs.size());
  BOOST_REQUIRE(whole.has_value());
  BOOST_TEST(whole->state == "paused");
  BOOST_TEST(whole->pause_mode == "memory");
  BOOST_TEST(whole->writable_layer_bytes == 300u);
  BOOST_TEST(whole->last_seq == 5u);
  BOOST_TEST(whole->limits.memory_mib == 2048u);
  BOOST_TEST(whole->runtime == "runsc"); // the created event's (its default)
  for (std::size_t split = 1; split < evs.size(); ++split) {
    auto first = fold_all(evs, 0, split);
    auto second = fold_all(evs, split, evs.size(), first);
    BOOST_TEST((second == whole), "split at " << split);
  }
  s.resume();
  auto resumed = fold_all(s.events(), evs.size(), s.events().size(), whole);
  BOOST_TEST(resumed->state == "running");
  BOOST_TEST(resumed->pause_mode == "");
  BOOST_TEST(resumed->writable_layer_bytes == 300u);
}

BOOST_AUTO_TEST_CASE(events_without_created_make_no_row) {
  sandbox_events s("sb-2", "acme", 0);
  s.created(512).started();
  auto evs = s.events();
  BOOST_TEST(!fold_all(evs, 1, 2).has_value());
}

BOOST_AUTO_TEST_CASE(rejection_only_moves_sequence_and_time) {
  sandbox_events s("sb-3", "acme", 0);
  s.created(512).started().after(1s).rejected(events::command_kind::pause_sandbox,
                                              events::errc::conflict, "no");
  auto row = fold_all(s.events(), 0, 3);
  BOOST_TEST(row->state == "running");
  BOOST_TEST(row->last_seq == 3u);
  BOOST_TEST(row->updated_at_ns == 1'000'000'000);
}

BOOST_AUTO_TEST_CASE(labels_and_limits_are_json_objects) {
  BOOST_TEST(labels_json({{"a", "x\"y"}, {"b", "2"}}) == R"({"a":"x\"y","b":"2"})");
  events::sandbox_limits l{1, 2, 3, 4};
  BOOST_TEST(limits_json(l) == R"({"cpu_millicores":2,"disk_mib":4,"memory_mib":1,"pids":3})");
}

BOOST_AUTO_TEST_CASE(compute_runs_from_start_or_resume_until_pause_delete_or_failure) {
  sandbox_events s("sb-4", "acme", 0);
  s.created(1024).after(1s).started().after(1h).pause(events::pause_mode::filesystem, 0);
  s.after(2h).resume().after(30min).fail("boom").after(1h).remove();
  std::optional<meter_state> m;
  std::vector<closed_interval> closed;
  for (const auto& e : s.events())
    meter_event(m, e, closed);
  std::vector<closed_interval> compute;
  for (const auto& c : closed)
    if (c.kind == meter::compute)
      compute.push_back(c);
  BOOST_REQUIRE(compute.size() == 2u);
  BOOST_TEST(compute[0].end_ms - compute[0].start_ms == 3'600'000);
  BOOST_TEST(compute[0].bytes == std::int64_t{1} << 30);
  BOOST_TEST(compute[1].end_ms - compute[1].start_ms == 1'800'000);
  BOOST_TEST(m->deleted);
  BOOST_TEST(!m->compute.has_value());
}

namespace {

std::vector<closed_interval> storage_of(const std::vector<events::event>& evs,
                                        std::optional<meter_state>& m) {
  std::vector<closed_interval> closed, storage;
  for (const auto& e : evs)
    meter_event(m, e, closed);
  for (const auto& c : closed)
    if (c.kind == meter::storage)
      storage.push_back(c);
  return storage;
}

} // namespace

// created opens the storage meter on 0 bytes; each reading closes an interval billed at the
// larger of its two readings (growth and shrinkage alike), deleted closes the last one on
// what it measured, and nothing after it counts.
BOOST_AUTO_TEST_CASE(storage_runs_from_creation_to_deletion_at_the_larger_reading) {
  sandbox_events s("sb-5", "acme", 0);
  s.created(1024).after(1h).started().sampled(10).after(1h).sampled(30).after(1h).sampled(20);
  s.after(1h).remove(25);
  s.after(1h).sampled(40); // after deletion: nothing
  std::optional<meter_state> m;
  auto storage = storage_of(s.events(), m);
  std::vector<std::int64_t> bytes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seqs;
  for (const auto& c : storage) {
    bytes.push_back(c.bytes);
    seqs.emplace_back(c.start_seq, c.end_seq);
    BOOST_TEST(c.end_ms - c.start_ms == 3'600'000);
  }
  // created(1) → sampled 10 (3): 10; → 30 (4): 30; → 20 (5): 30; → deleted 25 (7): 25.
  BOOST_TEST((bytes == std::vector<std::int64_t>{10, 30, 30, 25}));
  BOOST_TEST(
    (seqs == std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 3}, {3, 4}, {4, 5}, {5, 7}}));
  BOOST_TEST(m->deleted);
  BOOST_TEST(!m->storage.has_value());
}

// A layer written after the last reading and deleted: the interval is billed at what the
// delete measured, not at the stale reading before it.
BOOST_AUTO_TEST_CASE(a_layer_written_since_the_last_sample_is_billed_at_its_deletion) {
  sandbox_events s("sb-6", "acme", 0);
  s.created(1024).started().after(5min).remove(std::uint64_t{3} << 30);
  std::optional<meter_state> m;
  auto storage = storage_of(s.events(), m);
  BOOST_TEST_REQUIRE(storage.size() == 1u);
  BOOST_TEST(storage[0].bytes == std::int64_t{3} << 30);
  BOOST_TEST(storage[0].start_seq == 1u);
  BOOST_TEST(storage[0].end_seq == 4u);
  BOOST_TEST(storage[0].end_ms - storage[0].start_ms == 300'000);
}

// A deleted that measured nothing (0: the layer was already gone, or an older record) bills
// its interval at the opening reading.
BOOST_AUTO_TEST_CASE(a_deleted_that_measured_nothing_bills_the_opening_reading) {
  sandbox_events s("sb-7", "acme", 0);
  s.created(1024).started().sampled(50).after(1h).remove();
  std::optional<meter_state> m;
  auto storage = storage_of(s.events(), m);
  BOOST_TEST_REQUIRE(storage.size() == 1u); // created → sampled has no length
  BOOST_TEST(storage[0].bytes == 50);
  BOOST_TEST(storage[0].end_ms - storage[0].start_ms == 3'600'000);
}

// A warm pool's sandbox (docs/pools.md): its row is the pool tenant's until the claim, which
// gives it the claiming tenant, the claim's labels and the claim's time as its creation;
// whatever the batches.
BOOST_AUTO_TEST_CASE(a_claim_gives_the_row_its_tenant_labels_and_creation_in_any_batch_split) {
  sandbox_events s("sb-p1", "@pool", 1'000'000'000);
  s.pool_created(512, "python-3.12/crun/m512/c1000/p256/d10240").started();
  s.after(1h).claimed_by("acme", {{"task", "t-7"}}).after(1s).sampled(100);
  const auto evs = s.events();
  const auto claim_ns = evs[2].occurred_at.time_since_epoch().count();
  auto pooled = fold_all(evs, 0, 2);
  BOOST_TEST(pooled->tenant == "@pool");
  BOOST_TEST(pooled->labels.empty());
  auto whole = fold_all(evs, 0, evs.size());
  BOOST_TEST_REQUIRE(whole.has_value());
  BOOST_TEST(whole->tenant == "acme");
  BOOST_TEST(whole->state == "running");
  BOOST_TEST((whole->labels == std::vector<events::label>{{"task", "t-7"}}));
  BOOST_TEST(whole->created_at_ns == claim_ns);
  for (std::size_t split = 1; split < evs.size(); ++split) {
    auto first = fold_all(evs, 0, split);
    auto second = fold_all(evs, split, evs.size(), first);
    BOOST_TEST((second == whole), "split at " << split);
  }
  // Between the claim and its outcome, the tenant sees it being made.
  BOOST_TEST(fold_all(evs, 0, 3)->state == "creating");
}

// Billing starts at the claim, for the claiming tenant: nothing of the time the sandbox
// waited in its pool is billed to anyone; compute and storage open at the claim (storage on
// the layer's last reading, taken while it waited).
BOOST_AUTO_TEST_CASE(a_pool_sandbox_is_billed_from_its_claim_to_the_claiming_tenant) {
  sandbox_events s("sb-p2", "@pool", 0);
  s.pool_created(1024, "k").started().after(1h).sampled(100).after(2h);
  const auto claim_seq = s.events().size() + 1;
  s.claimed_by("acme").after(1h).sampled(200).after(1h).remove(300);
  std::optional<meter_state> m;
  std::vector<closed_interval> closed;
  for (const auto& e : s.events())
    meter_event(m, e, closed);
  BOOST_TEST_REQUIRE(closed.size() == 3u);
  const std::int64_t claim_ms = 3 * 3'600'000;
  for (const auto& c : closed) {
    BOOST_TEST(c.tenant == "acme");
    BOOST_TEST(c.start_seq >= claim_seq);
    BOOST_TEST(c.start_ms >= claim_ms);
  }
  // compute: claim -> delete_requested, 2 h of 1 GiB.
  BOOST_TEST((closed[1].kind == meter::compute));
  BOOST_TEST(closed[1].end_ms - closed[1].start_ms == 2 * 3'600'000);
  BOOST_TEST(closed[1].bytes == std::int64_t{1} << 30);
  // storage: claim (on 100) -> sampled 200: 200; -> deleted 300: 300.
  BOOST_TEST((closed[0].kind == meter::storage));
  BOOST_TEST(closed[0].bytes == 200);
  BOOST_TEST(closed[0].start_ms == claim_ms);
  BOOST_TEST((closed[2].kind == meter::storage));
  BOOST_TEST(closed[2].bytes == 300);
  BOOST_TEST(m->deleted);
}

// A pool sandbox deleted unclaimed (retired) was never billed to anyone.
BOOST_AUTO_TEST_CASE(a_pool_sandbox_deleted_unclaimed_bills_nothing) {
  sandbox_events s("sb-p3", "@pool", 0);
  s.pool_created(1024, "k").started().after(1h).sampled(100).after(1h).remove(100);
  std::optional<meter_state> m;
  std::vector<closed_interval> closed;
  for (const auto& e : s.events())
    meter_event(m, e, closed);
  BOOST_TEST(closed.empty());
  BOOST_TEST(m->deleted);
}

namespace {

events::template_event template_change(const std::string& id, events::template_scope scope,
                                       events::template_change c) {
  return {id, "app", scope, std::move(c)};
}

events::template_ready ready_of(std::uint64_t bytes) {
  events::template_ready r;
  r.layers = {{{}, bytes}};
  r.total_bytes = bytes;
  return r;
}

} // namespace

// A tenant's own template: its meter, keyed by its id, opens at `ready` on its layers' bytes and
// closes at `deleted`; the events before `ready` (created, layer_added) bill nothing.
BOOST_AUTO_TEST_CASE(a_tenant_template_is_metered_from_ready_to_deleted) {
  using events::template_scope;
  sandbox_events s(std::string(events::template_stream_key), "acme", 0);
  s.add(template_change("tpl_a", template_scope::tenant, events::template_created{}));
  s.after(1h).add(template_change("tpl_a", template_scope::tenant, ready_of(700)));
  s.after(2h).add(template_change("tpl_a", template_scope::tenant, events::template_deleted{}));
  s.after(1h).add(template_change("tpl_a", template_scope::tenant, events::template_deleted{}));
  std::optional<meter_state> m;
  for (const auto& e : s.events())
    BOOST_TEST(meter_key(e) == "tpl_a");
  auto storage = storage_of(s.events(), m);
  BOOST_TEST_REQUIRE(storage.size() == 1u); // the second deleted changes nothing
  BOOST_TEST(storage[0].sandbox_id == "tpl_a");
  BOOST_TEST(storage[0].tenant == "acme");
  BOOST_TEST(storage[0].bytes == 700);
  BOOST_TEST(storage[0].start_seq == 2u);
  BOOST_TEST(storage[0].end_seq == 3u);
  BOOST_TEST(storage[0].end_ms - storage[0].start_ms == 2 * 3'600'000);
  BOOST_TEST(m->deleted);
  BOOST_TEST(!m->compute.has_value());
  BOOST_TEST(meter_event_id("tpl_a", 3) == "@templates:3");
  BOOST_TEST(meter_event_id("sb-1", 3) == "sb-1:3");
}

// A global template is the operator's: no meter, no interval. And a template event never moves
// a sandbox's meters.
BOOST_AUTO_TEST_CASE(a_global_template_bills_nobody_and_no_sandbox_meter_moves) {
  using events::template_scope;
  sandbox_events g(std::string(events::template_stream_key), "operator", 0);
  g.add(template_change("tpl_g", template_scope::global, ready_of(5000)));
  g.after(1h).add(template_change("tpl_g", template_scope::global, events::template_deleted{}));
  std::optional<meter_state> m;
  BOOST_TEST(storage_of(g.events(), m).empty());
  BOOST_TEST(!m.has_value());

  sandbox_events s("sb-8", "acme", 0);
  s.created(1024).started().sampled(10);
  std::optional<meter_state> sm;
  storage_of(s.events(), sm);
  const auto before = sm;
  sandbox_events t(std::string(events::template_stream_key), "acme", 0);
  t.after(1h).add(template_change("tpl_a", template_scope::tenant, events::template_deleted{}));
  BOOST_TEST(storage_of(t.events(), sm).empty());
  BOOST_TEST((sm == before));
}
