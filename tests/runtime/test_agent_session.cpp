// agent_session: the host's checks of every frame an agent sends — a hello first, frames
// only on streams the host opened and has not seen end, output only after the start and
// within the credit granted, answers within the deadline — and the deadlines themselves
// (none while frozen, moved on by the time frozen). Each refusal names what the agent did.
#define BOOST_TEST_MODULE agent_session
#include <boost/test/unit_test.hpp>

#include "runtime/agent_session.hpp"

#include <string>

using namespace sandboxd::runtime;
using namespace std::chrono_literals;
using clock_type = agent_session::clock;

namespace {

agent_frame frame(std::uint8_t kind, std::uint32_t stream, std::string body = {}) {
  return {kind, stream, std::move(body)};
}

std::string u32(std::uint32_t v) {
  std::string s;
  put_u32(s, v);
  return s;
}

std::string hello_body(std::uint32_t version = SBA_VERSION) {
  std::string b(SBA_MAGIC, 8);
  put_u32(b, version);
  put_u32(b, 1);
  put_u32(b, 0);
  return b;
}

std::string exited_body(std::int32_t status, std::uint32_t flags = 0) {
  return u32(static_cast<std::uint32_t>(status)) + u32(flags);
}

// Cuts the frames the host put on `wire`.
std::vector<agent_frame> sent(const std::string& wire) {
  frame_reader r;
  std::vector<agent_frame> out;
  auto room = r.space();
  BOOST_TEST_REQUIRE(room.size() >= wire.size());
  std::copy(wire.begin(), wire.end(), room.begin());
  BOOST_TEST_REQUIRE(!r.commit(wire.size(), [&](agent_frame&& f) { out.push_back(f); }));
  return out;
}

struct fixture {
  clock_type::time_point t0 = clock_type::now();
  agent_session::limits lim{1000ms, 3000ms, 4};
  agent_session s{lim, t0};
  agent_session::events evs;
  std::string wire;

  std::optional<std::string> take(agent_frame f, clock_type::time_point at) {
    return s.take(std::move(f), at, evs);
  }
  std::optional<std::string> take(agent_frame f) { return take(std::move(f), t0); }

  void ready() { BOOST_TEST_REQUIRE(!take(frame(SBA_HELLO, 0, hello_body()))); }

  std::uint32_t open(std::uint32_t window = 100, std::chrono::milliseconds timeout = 0ms,
                     bool stdin_pipe = false) {
    agent_spawn sp;
    sp.argv = {"true"};
    sp.window = window;
    sp.stdin_pipe = stdin_pipe;
    auto id = s.open(sp, timeout, 500ms, t0, wire);
    BOOST_TEST_REQUIRE(id.has_value());
    return *id;
  }
  void started(std::uint32_t id) { BOOST_TEST_REQUIRE(!take(frame(SBA_STARTED, id, u32(42)))); }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(the_first_frame_must_be_a_hello_of_this_version, fixture) {
  auto why = take(frame(SBA_OUT, 1, "x"));
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("not hello") != std::string::npos, *why);

  agent_session magic(lim, t0);
  std::string bad = hello_body();
  bad[0] = 'X';
  BOOST_TEST(magic.take(frame(SBA_HELLO, 0, bad), t0, evs).has_value());

  agent_session version(lim, t0);
  auto v = version.take(frame(SBA_HELLO, 0, hello_body(SBA_VERSION + 1)), t0, evs);
  BOOST_TEST_REQUIRE(v.has_value());
  BOOST_TEST(v->find("version") != std::string::npos, *v);

  ready();
  BOOST_TEST(s.ready());
  BOOST_TEST(s.agent_pid() == 1u);
  // A second hello is a frame on stream 0 that no agent sends.
  BOOST_TEST(take(frame(SBA_HELLO, 0, hello_body())).has_value());
}

BOOST_FIXTURE_TEST_CASE(frames_for_streams_the_host_did_not_open_are_refused, fixture) {
  ready();
  auto why = take(frame(SBA_STARTED, 7, u32(1)));
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("stream 7") != std::string::npos, *why);
  const auto id = open();
  started(id);
  BOOST_TEST_REQUIRE(!take(frame(SBA_EXITED, id, exited_body(0))));
  BOOST_TEST((evs.back().second.what == stream_event::type::exited));
  // Ended: nothing more may come on it.
  BOOST_TEST(take(frame(SBA_OUT, id, "late")).has_value());
  BOOST_TEST(take(frame(SBA_EXITED, id, exited_body(0))).has_value());
}

BOOST_FIXTURE_TEST_CASE(output_before_the_start_or_past_the_credit_is_refused, fixture) {
  ready();
  const auto id = open(10);
  BOOST_TEST(take(frame(SBA_OUT, id, "x")).has_value()); // before started
  fixture g;
  g.ready();
  const auto gid = g.open(10);
  g.started(gid);
  BOOST_TEST_REQUIRE(!g.take(frame(SBA_OUT, gid, std::string(6, 'a'))));
  BOOST_TEST_REQUIRE(!g.take(frame(SBA_ERR, gid, std::string(4, 'b')))); // shares the credit
  auto why = g.take(frame(SBA_OUT, gid, "c"));
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("credit of 0") != std::string::npos, *why);

  fixture h;
  h.ready();
  const auto hid = h.open(10);
  h.started(hid);
  BOOST_TEST_REQUIRE(!h.take(frame(SBA_OUT, hid, std::string(10, 'a'))));
  h.wire.clear();
  h.s.grant(hid, 5, h.wire);
  auto credit = sent(h.wire);
  BOOST_TEST_REQUIRE(credit.size() == 1u);
  BOOST_TEST(credit[0].kind == SBA_CREDIT);
  BOOST_TEST(get_u32(credit[0].body.data()) == 5u);
  BOOST_TEST(!h.take(frame(SBA_OUT, hid, std::string(5, 'a'))));
  BOOST_TEST(h.take(frame(SBA_OUT, hid, "a")).has_value());
  // An empty output frame is refused too: it would cost the host a wake-up for nothing.
  fixture e;
  e.ready();
  const auto eid = e.open(10);
  e.started(eid);
  BOOST_TEST(e.take(frame(SBA_OUT, eid, "")).has_value());
}

// The agent reads and drops what an exec writes past its cap: output beyond it is an agent
// that lies, whatever credit it still has.
BOOST_FIXTURE_TEST_CASE(output_past_the_execs_cap_is_refused_per_pipe, fixture) {
  ready();
  agent_spawn sp;
  sp.argv = {"cat"};
  sp.window = 100;
  sp.max_output = 8;
  const auto id = s.open(sp, 0ms, 500ms, t0, wire);
  BOOST_TEST_REQUIRE(id.has_value());
  started(*id);
  BOOST_TEST_REQUIRE(!take(frame(SBA_OUT, *id, std::string(5, 'a'))));
  BOOST_TEST_REQUIRE(!take(frame(SBA_OUT, *id, std::string(3, 'a')))); // exactly the cap
  BOOST_TEST_REQUIRE(!take(frame(SBA_ERR, *id, std::string(8, 'b')))); // stderr's own cap
  auto why = take(frame(SBA_OUT, *id, "c"));
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("9 bytes of stdout on stream " + std::to_string(*id)) != std::string::npos,
             *why);
  BOOST_TEST(why->find("output cap of 8") != std::string::npos, *why);
  fixture g;
  g.ready();
  sp.max_output = 8;
  const auto gid = g.s.open(sp, 0ms, 500ms, g.t0, g.wire);
  g.started(*gid);
  BOOST_TEST_REQUIRE(!g.take(frame(SBA_ERR, *gid, std::string(8, 'b'))));
  BOOST_TEST(g.take(frame(SBA_ERR, *gid, "b")).has_value());
  // Without a cap only the credit bounds it.
  fixture h;
  h.ready();
  sp.max_output = 0;
  const auto hid = h.s.open(sp, 0ms, 500ms, h.t0, h.wire);
  h.started(*hid);
  BOOST_TEST(!h.take(frame(SBA_OUT, *hid, std::string(100, 'a'))));
}

BOOST_FIXTURE_TEST_CASE(bodies_of_the_wrong_size_and_unknown_kinds_are_refused, fixture) {
  ready();
  const auto id = open();
  BOOST_TEST(take(frame(SBA_STARTED, id, "abc")).has_value());
  fixture g;
  g.ready();
  const auto gid = g.open();
  g.started(gid);
  BOOST_TEST(g.take(frame(SBA_EXITED, gid, "1234567")).has_value());
  BOOST_TEST(g.take(frame(200, gid, "")).has_value());
  fixture h;
  h.ready();
  const auto hid = h.open();
  h.started(hid);
  BOOST_TEST(h.take(frame(SBA_EXITED, hid, exited_body(0, 0x80))).has_value()); // unknown flag
  fixture k;
  k.ready();
  const auto kid = k.open();
  // The host's own kinds are never the agent's.
  BOOST_TEST(k.take(frame(SBA_SPAWN, kid, "")).has_value());
}

BOOST_FIXTURE_TEST_CASE(a_failed_start_is_quoted_printable_and_bounded, fixture) {
  ready();
  const auto id = open();
  std::string text = "no such\x01\xff program";
  BOOST_TEST_REQUIRE(!take(frame(SBA_FAILED, id, u32(2) + text)));
  BOOST_TEST(evs.back().second.data == "no such?? program");
  BOOST_TEST(evs.back().second.status == 2);
  fixture g;
  g.ready();
  const auto gid = g.open();
  BOOST_TEST(g.take(frame(SBA_FAILED, gid, u32(2) + std::string(300, 'x'))).has_value());
}

BOOST_FIXTURE_TEST_CASE(a_resize_goes_to_an_open_stream_only, fixture) {
  ready();
  const auto id = open(100, 0ms, true);
  wire.clear();
  s.resize(id, 132, 50, wire);
  auto f = sent(wire);
  BOOST_TEST_REQUIRE(f.size() == 1u);
  BOOST_TEST(f[0].kind == SBA_RESIZE);
  BOOST_TEST(f[0].stream == id);
  BOOST_TEST(f[0].body == std::string("\x84\0\x32\0", 4)); // cols, rows: u16 little-endian
  wire.clear();
  s.resize(id + 1, 10, 10, wire); // no such stream
  BOOST_TEST(wire.empty());
}

BOOST_FIXTURE_TEST_CASE(stdin_is_sent_within_its_credit_and_credit_back_is_bounded, fixture) {
  ready();
  const auto id = open(100, 0ms, true);
  BOOST_TEST(s.stdin_room(id) == SBA_STDIN_WINDOW);
  wire.clear();
  s.send_stdin(id, std::string(SBA_STDIN_WINDOW + 1, 'x'), wire); // over the room: not sent
  BOOST_TEST(wire.empty());
  s.send_stdin(id, std::string(1000, 'x'), wire);
  BOOST_TEST(s.stdin_room(id) == SBA_STDIN_WINDOW - 1000);
  BOOST_TEST(sent(wire).at(0).kind == SBA_STDIN);
  BOOST_TEST_REQUIRE(!take(frame(SBA_STDIN_CREDIT, id, u32(600))));
  BOOST_TEST(s.stdin_room(id) == SBA_STDIN_WINDOW - 400);
  // More credit back than is outstanding is a lie.
  auto why = take(frame(SBA_STDIN_CREDIT, id, u32(401)));
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("400 outstanding") != std::string::npos, *why);
  fixture g;
  g.ready();
  const auto gid = g.open(); // no stdin pipe: no stdin credit either
  BOOST_TEST(g.take(frame(SBA_STDIN_CREDIT, gid, u32(1))).has_value());
}

BOOST_FIXTURE_TEST_CASE(signal_answers_must_have_been_asked_for, fixture) {
  ready();
  const auto id = open();
  started(id);
  BOOST_TEST(take(frame(SBA_SIGNALLED, id, u32(3))).has_value());
  fixture g;
  g.ready();
  const auto gid = g.open();
  g.started(gid);
  g.s.signal(gid, 9, g.t0, g.wire);
  BOOST_TEST_REQUIRE(!g.take(frame(SBA_SIGNALLED, gid, u32(3))));
  BOOST_TEST(g.evs.back().second.value == 3u);
  // An exec that ended still answers a signal asked for before its end.
  g.s.signal(gid, 9, g.t0, g.wire);
  BOOST_TEST_REQUIRE(!g.take(frame(SBA_EXITED, gid, exited_body(9))));
  BOOST_TEST(!g.take(frame(SBA_SIGNALLED, gid, u32(0))));
  BOOST_TEST(g.s.open_streams() == 0u);
}

BOOST_FIXTURE_TEST_CASE(no_more_than_max_streams_are_open_at_once, fixture) {
  ready();
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < 4; ++i)
    ids.push_back(open());
  agent_spawn sp;
  sp.argv = {"true"};
  BOOST_TEST(!s.open(sp, 0ms, 500ms, t0, wire).has_value());
  started(ids[0]);
  BOOST_TEST_REQUIRE(!take(frame(SBA_EXITED, ids[0], exited_body(0))));
  auto next = s.open(sp, 0ms, 500ms, t0, wire);
  BOOST_TEST_REQUIRE(next.has_value());
  BOOST_TEST(*next > ids.back()); // never reused
}

BOOST_FIXTURE_TEST_CASE(every_wait_has_a_deadline, fixture) {
  // A hello.
  BOOST_TEST(!s.overdue(t0 + 999ms, std::nullopt));
  auto why = s.overdue(t0 + 1000ms, std::nullopt);
  BOOST_TEST_REQUIRE(why.has_value());
  BOOST_TEST(why->find("hello") != std::string::npos, *why);

  // A spawn's answer.
  fixture g;
  g.ready();
  const auto gid = g.open();
  BOOST_TEST(g.s.overdue(g.t0 + 1001ms, std::nullopt).value_or("").find("spawn") !=
             std::string::npos);
  g.started(gid);
  BOOST_TEST(!g.s.overdue(g.t0 + 2000ms, std::nullopt));
  // The rest of a frame.
  BOOST_TEST(g.s.overdue(g.t0 + 2000ms, g.t0 + 500ms).value_or("").find("frame") !=
             std::string::npos);
  // A signal's answer.
  g.s.signal(gid, 15, g.t0, g.wire);
  BOOST_TEST(g.s.overdue(g.t0 + 1001ms, std::nullopt).value_or("").find("signal") !=
             std::string::npos);

  // The end of an exec after its timeout: timeout + backstop + answer.
  fixture h;
  h.ready();
  const auto hid = h.open(100, 2000ms);
  h.started(hid);
  BOOST_TEST(!h.s.overdue(h.t0 + 3499ms, std::nullopt));
  BOOST_TEST(h.s.overdue(h.t0 + 3500ms, std::nullopt).value_or("").find("timeout") !=
             std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(a_quiet_agent_is_pinged_and_must_answer_that_ping, fixture) {
  ready();
  const auto id = open();
  started(id);
  wire.clear();
  s.ping_if_quiet(t0 + 2999ms, wire);
  BOOST_TEST(wire.empty());
  s.ping_if_quiet(t0 + 3000ms, wire);
  auto ping = sent(wire);
  BOOST_TEST_REQUIRE(ping.size() == 1u);
  BOOST_TEST(ping[0].kind == SBA_PING);
  BOOST_TEST(s.overdue(t0 + 4000ms, std::nullopt).value_or("").find("ping") != std::string::npos);
  // A pong with another nonce answers no ping.
  std::string other;
  put_u64(other, get_u64(ping[0].body.data()) + 1);
  BOOST_TEST(take(frame(SBA_PONG, 0, other), t0 + 3100ms).has_value());
  fixture g;
  g.ready();
  const auto gid = g.open();
  g.started(gid);
  g.s.ping_if_quiet(g.t0 + 3000ms, g.wire);
  auto gping = sent(g.wire);
  BOOST_TEST_REQUIRE(!g.take(frame(SBA_PONG, 0, gping.back().body), g.t0 + 3100ms));
  BOOST_TEST(!g.s.overdue(g.t0 + 5000ms, std::nullopt));
  // Unasked, a pong is refused.
  BOOST_TEST(g.take(frame(SBA_PONG, 0, gping.back().body), g.t0 + 3200ms).has_value());
}

BOOST_FIXTURE_TEST_CASE(nothing_is_overdue_while_frozen_and_deadlines_move_on_by_the_freeze,
                        fixture) {
  ready();
  const auto id = open(100, 2000ms);
  started(id);
  s.freeze(t0 + 1000ms);
  BOOST_TEST(!s.overdue(t0 + 60s, std::nullopt));
  wire.clear();
  s.ping_if_quiet(t0 + 60s, wire);
  BOOST_TEST(wire.empty()); // a frozen agent is not pinged
  s.thaw(t0 + 11s);         // 10 s frozen
  BOOST_TEST(!s.overdue(t0 + 13499ms, std::nullopt));
  BOOST_TEST(s.overdue(t0 + 13500ms, std::nullopt).has_value());
}
