// The snapshot codec of a sandbox's state and the snapshots built on it (no actors involved).
#define BOOST_TEST_MODULE state_codec
#include <boost/test/unit_test.hpp>

#include "actors/runtime_steps.hpp"
#include "actors/state_codec.hpp"
#include "actors/state_snapshot.hpp"
#include "tests/actors/actor_harness.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <future>

using namespace sandboxd::test;
namespace cmd = sandboxd::actors::cmd;

namespace {

// `c` decided in `s` (it must be accepted) and its events applied.
void decide_and_apply(ac::sandbox_state& s, const ac::command& c, ev::time_point now) {
  auto d = ac::decide(s, c, now);
  BOOST_REQUIRE_MESSAGE(d.ok(), (d.ok() ? std::string() : d.failure().message));
  for (const auto& e : d.emitted())
    s = ac::evolve(s, e);
}

ac::recovered_sandbox busy_sandbox() {
  ac::sandbox_state s = ac::initial_state("sb-codec");
  const auto now = ev::time_point(ev::nanoseconds(1'700'000'000'000'000'000));
  auto apply = [&](ac::command c) { decide_and_apply(s, c, now); };
  auto sp = spec("req-9");
  sp.labels = {{"team", "ml"}};
  sp.timeouts.idle_timeout = std::chrono::seconds(30);
  apply(user(cmd::create{sp}));
  apply(ac::system_command(s, cmd::runtime_started{}));
  cmd::exec x;
  x.exec_id = "x1";
  x.argv = {"echo", "hi"};
  apply(user(x));
  ev::file_op_requested op;
  op.op_id = "op-1";
  op.kind = ev::file_op_kind::rename;
  op.path = "/a";
  op.to_path = "/b";
  apply(user(cmd::rename_path{op, {}}));
  apply(ac::system_command(s, cmd::runtime_failed{"the sandbox died"}));
  ac::recovered_sandbox r;
  r.state = s;
  r.offsets = {3, 4, 9, 10};
  // A failed sandbox has none open; the codec keeps whatever the state holds.
  r.state.connections_open = {"conn-1"};
  return r;
}

// The bytes the newest field (the open connections) adds at the end.
std::size_t connections_trailer(const ac::recovered_sandbox& r) {
  std::size_t n = 8;
  for (const auto& c : r.state.connections_open)
    n += 8 + c.size();
  return n;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_state_survives_encoding) {
  auto r = busy_sandbox();
  BOOST_REQUIRE(r.state.status == ac::sandbox_status::failed);
  std::string bytes;
  ac::encode_state(r, bytes);
  auto back = ac::decode_state(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((*back == r));
}

// A warm pool's sandbox mid-claim (docs/pools.md): its pool key, its claiming tenant and
// status survive a snapshot. The claim carries an environment (one without is complete at
// once: never `claiming`).
BOOST_AUTO_TEST_CASE(a_pool_sandbox_in_the_middle_of_a_claim_survives_encoding) {
  ac::sandbox_state s = ac::initial_state("sb-pooled");
  const auto now = ev::time_point(ev::nanoseconds(1'700'000'000'000'000'000));
  auto apply = [&](ac::command c) { decide_and_apply(s, c, now); };
  auto sp = spec();
  sp.pool = "base/hollow/m256/c500/p0/d0";
  apply(user(cmd::create{sp}, std::string(ev::k_pool_tenant)));
  apply(ac::system_command(s, cmd::runtime_started{}));
  ev::claim_requested claim;
  claim.labels = {{"task", "t"}};
  claim.client_request_id = "req-claim";
  claim.env = {{"TASK", "t", false, std::nullopt}};
  apply(user(cmd::claim{claim}, "acme"));
  BOOST_TEST_REQUIRE((s.status == ac::sandbox_status::claiming));
  ac::recovered_sandbox r;
  r.state = s;
  r.offsets = {1, 2, 3};
  std::string bytes;
  ac::encode_state(r, bytes);
  auto back = ac::decode_state(bytes);
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST((back->state == r.state));
  BOOST_TEST(back->state.tenant == "acme");
  BOOST_TEST(back->state.spec.pool == sp.pool);
}

BOOST_AUTO_TEST_CASE(a_state_written_before_the_file_ops_field_still_decodes) {
  auto r = busy_sandbox();
  BOOST_REQUIRE_EQUAL(r.state.file_ops_in_flight.size(), 1u);
  std::string bytes;
  ac::encode_state(r, bytes);
  // The older format ends after the offsets: drop the trailer (count, id, kind; redacted;
  // connections).
  const auto trailer =
    8 + 8 + r.state.file_ops_in_flight[0].op_id.size() + 8 + 8 + connections_trailer(r);
  auto back = ac::decode_state(std::string_view(bytes).substr(0, bytes.size() - trailer));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->state.file_ops_in_flight.empty());
  r.state.file_ops_in_flight.clear();
  r.state.connections_open.clear();
  BOOST_TEST((*back == r));
}

BOOST_AUTO_TEST_CASE(a_redacted_state_survives_and_one_written_before_the_field_is_not) {
  auto r = busy_sandbox();
  r.state.redacted = true;
  std::string bytes;
  ac::encode_state(r, bytes);
  auto back = ac::decode_state(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->state.redacted);
  BOOST_TEST((*back == r));
  // The format before the field ends after the file ops.
  auto older =
    ac::decode_state(std::string_view(bytes).substr(0, bytes.size() - 8 - connections_trailer(r)));
  BOOST_REQUIRE(older.has_value());
  BOOST_TEST(!older->state.redacted);
}

BOOST_AUTO_TEST_CASE(open_connections_survive_and_a_state_written_before_them_has_none) {
  auto r = busy_sandbox();
  r.state.connections_open = {"conn-1", "conn-2"};
  std::string bytes;
  ac::encode_state(r, bytes);
  auto back = ac::decode_state(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((back->state.connections_open == std::vector<std::string>{"conn-1", "conn-2"}));
  auto older =
    ac::decode_state(std::string_view(bytes).substr(0, bytes.size() - connections_trailer(r)));
  BOOST_REQUIRE(older.has_value());
  BOOST_TEST(older->state.connections_open.empty());
  BOOST_TEST(older->state.redacted == r.state.redacted);
}

BOOST_AUTO_TEST_CASE(truncated_or_damaged_bytes_do_not_decode) {
  auto r = busy_sandbox();
  std::string bytes;
  ac::encode_state(r, bytes);
  const auto before_connections = bytes.size() - connections_trailer(r);
  const auto before_redacted = before_connections - 8;
  const auto before_file_ops =
    before_redacted - (8 + 8 + r.state.file_ops_in_flight[0].op_id.size() + 8);
  for (std::size_t cut = 0; cut < bytes.size(); cut += 1)
    if (cut != before_file_ops && cut != before_redacted &&
        cut != before_connections) // complete states of older formats
      BOOST_TEST(!ac::decode_state(std::string_view(bytes).substr(0, cut)).has_value());
  bytes[16] = '\x7f'; // the tenant's length
  BOOST_TEST(!ac::decode_state(bytes).has_value());
}

BOOST_AUTO_TEST_CASE(a_snapshot_round_trips_and_a_damaged_one_is_ignored) {
  temp_dir dir("actors-snap");
  ac::partition_view v;
  v.partition = 2;
  v.next_offset = 11;
  auto r = busy_sandbox();
  v.sandboxes.emplace(r.state.sandbox_id, r);
  ac::write_partition_snapshot(dir.path(), v);
  auto back = ac::load_partition_snapshot(dir.path(), 2);
  BOOST_TEST(back.next_offset == 11);
  BOOST_TEST(back.from_snapshot == 1u);
  BOOST_REQUIRE(back.sandboxes.count("sb-codec") == 1u);
  BOOST_TEST((back.sandboxes.at("sb-codec") == r));
  BOOST_TEST(ac::load_partition_snapshot(dir.path(), 3).next_offset == 0);
  check_shell("printf 'X' | dd of=" + dir / "partition-2.snapshot" +
              " bs=1 seek=60 conv=notrunc status=none");
  auto damaged = ac::load_partition_snapshot(dir.path(), 2);
  BOOST_TEST(damaged.next_offset == 0);
  BOOST_TEST(damaged.sandboxes.empty());
}
