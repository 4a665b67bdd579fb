// agent_frame: frames the host cuts from an agent's bytes are exactly the frames that were
// put, however the bytes are split; a length over the bound or a header with flags set is
// refused before any of its body is taken; a body larger than the read buffer is read
// straight into its frame; a spawn body carries each field as tag, length, value.
#define BOOST_TEST_MODULE agent_frame
#include <boost/test/unit_test.hpp>

#include "runtime/agent_frame.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace sandboxd::runtime;

namespace {

// Feeds `wire` to `r` in pieces of at most `piece` bytes (as reads of a socket would give
// them); the frames cut, and the first refusal.
struct fed {
  std::vector<agent_frame> frames;
  std::optional<std::string> refused;
  std::size_t taken = 0; // bytes given to the reader before it refused
};

fed feed(frame_reader& r, const std::string& wire, std::size_t piece) {
  fed out;
  std::size_t at = 0;
  while (at < wire.size()) {
    auto room = r.space();
    BOOST_TEST_REQUIRE(!room.empty());
    const std::size_t n = std::min({room.size(), piece, wire.size() - at});
    std::memcpy(room.data(), wire.data() + at, n);
    at += n;
    out.taken = at;
    if (auto why = r.commit(n, [&](agent_frame&& f) { out.frames.push_back(std::move(f)); })) {
      out.refused = why;
      return out;
    }
  }
  return out;
}

std::string header(std::uint32_t len, std::uint8_t kind, std::uint8_t flags, std::uint32_t stream) {
  std::string h;
  put_u32(h, len);
  h.push_back(static_cast<char>(kind));
  h.push_back(static_cast<char>(flags));
  h.append(2, '\0');
  put_u32(h, stream);
  return h;
}

} // namespace

BOOST_AUTO_TEST_CASE(frames_survive_every_split_of_the_byte_stream) {
  std::vector<agent_frame> sent = {
    {SBA_HELLO, 0, std::string("sbdagent\1\0\0\0\7\0\0\0\0\0\0\0", 20)},
    {SBA_OUT, 3, std::string(100000, 'x')},
    {SBA_EXITED, 3, std::string(8, '\0')},
    {SBA_ERR, 9, "e"},
    {SBA_STARTED, 4294967295u, "abcd"},
  };
  std::string wire;
  for (auto& f : sent)
    put_frame(wire, f.kind, f.stream, f.body);
  for (std::size_t piece :
       {std::size_t{1}, std::size_t{7}, std::size_t{12}, std::size_t{4096}, wire.size()}) {
    frame_reader r(1024); // smaller than the big frame: it is read straight into its body
    auto got = feed(r, wire, piece);
    BOOST_TEST_REQUIRE(!got.refused, *got.refused);
    BOOST_TEST_REQUIRE(got.frames.size() == sent.size(), "piece " << piece);
    for (std::size_t i = 0; i < sent.size(); ++i) {
      BOOST_TEST(got.frames[i].kind == sent[i].kind);
      BOOST_TEST(got.frames[i].stream == sent[i].stream);
      BOOST_TEST(got.frames[i].body == sent[i].body);
    }
    BOOST_TEST(!r.mid_frame());
  }
}

BOOST_AUTO_TEST_CASE(a_length_over_the_bound_is_refused_from_its_header_alone) {
  frame_reader r;
  // Only the header: the reader must refuse without waiting for (or making room for) a body.
  auto got = feed(r, header(SBA_MAX_BODY + 1, SBA_OUT, 0, 1), 64);
  BOOST_TEST_REQUIRE(got.refused.has_value());
  BOOST_TEST(got.refused->find(std::to_string(SBA_MAX_BODY + 1)) != std::string::npos,
             *got.refused);
  frame_reader huge;
  BOOST_TEST(feed(huge, header(0xffffffffu, SBA_OUT, 0, 1), 64).refused.has_value());
  // The bound itself is a frame.
  frame_reader most(4096);
  std::string wire;
  put_frame(wire, SBA_OUT, 1, std::string(SBA_MAX_BODY, 'b'));
  auto ok = feed(most, wire, 1u << 16);
  BOOST_TEST_REQUIRE(!ok.refused);
  BOOST_TEST(ok.frames.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_header_with_flags_or_reserved_bits_is_refused) {
  for (int byte : {5, 6, 7}) {
    std::string h = header(0, SBA_PONG, 0, 0);
    h[byte] = 1;
    frame_reader r;
    auto got = feed(r, h, 12);
    BOOST_TEST(got.refused.has_value(), "byte " << byte);
    BOOST_TEST(got.frames.empty());
  }
}

BOOST_AUTO_TEST_CASE(garbage_is_refused_within_one_header_and_holds_nothing_more) {
  std::mt19937 rng(27);
  int refused = 0;
  for (int round = 0; round < 200; ++round) {
    std::string junk(4096, '\0');
    for (auto& c : junk)
      c = static_cast<char>(rng());
    frame_reader r(512);
    auto got = feed(r, junk, 1 + rng() % 700);
    if (got.refused) {
      ++refused;
      continue;
    }
    // Whatever was accepted is whole frames of bounded bodies, or one frame in progress.
    for (auto& f : got.frames)
      BOOST_TEST(f.body.size() <= SBA_MAX_BODY);
    BOOST_TEST(r.space().size() <= SBA_MAX_BODY);
  }
  // Random lengths are almost never under 1 MiB with zero flags: most rounds are refused.
  BOOST_TEST(refused > 150);
}

BOOST_AUTO_TEST_CASE(an_incomplete_frame_is_seen_as_mid_frame) {
  std::string wire;
  put_frame(wire, SBA_OUT, 1, "hello");
  frame_reader r;
  auto got = feed(r, wire.substr(0, wire.size() - 1), 64);
  BOOST_TEST(got.frames.empty());
  BOOST_TEST(r.mid_frame());
  auto rest = feed(r, wire.substr(wire.size() - 1), 64);
  BOOST_TEST(rest.frames.size() == 1u);
  BOOST_TEST(!r.mid_frame());
}

BOOST_AUTO_TEST_CASE(a_spawn_body_holds_each_field_as_tag_length_value) {
  agent_spawn s;
  s.argv = {"/bin/sh", "-c", "echo hi"};
  s.env = {"PATH=/bin", "A=1"};
  s.cwd = "/tmp";
  s.timeout_ms = 1500;
  s.stdin_pipe = true;
  s.max_output = 4096;
  s.window = 65536;
  const std::string b = spawn_body(s);
  std::vector<std::pair<int, std::string>> fields;
  for (std::size_t at = 0; at < b.size();) {
    BOOST_TEST_REQUIRE(b.size() - at >= 5u);
    const int tag = static_cast<unsigned char>(b[at]);
    const std::uint32_t len = get_u32(b.data() + at + 1);
    BOOST_TEST_REQUIRE(len <= b.size() - at - 5);
    fields.emplace_back(tag, b.substr(at + 5, len));
    at += 5 + len;
  }
  std::vector<std::string> args, env;
  std::map<int, std::string> one;
  for (auto& [tag, v] : fields) {
    if (tag == SBA_ARG)
      args.push_back(v);
    else if (tag == SBA_ENV)
      env.push_back(v);
    else
      one[tag] = v;
  }
  BOOST_TEST(args == s.argv);
  BOOST_TEST(env == s.env);
  BOOST_TEST(one[SBA_CWD] == "/tmp");
  BOOST_TEST(get_u64(one[SBA_TIMEOUT_MS].data()) == 1500u);
  BOOST_TEST(one[SBA_STDIN_PIPE] == std::string(1, '\1'));
  BOOST_TEST(get_u64(one[SBA_MAX_OUTPUT].data()) == 4096u);
  BOOST_TEST(get_u32(one[SBA_WINDOW].data()) == 65536u);
  BOOST_TEST(one.count(SBA_BUILTIN) == 0u); // only a builtin names one
  BOOST_TEST(one.count(SBA_USER) == 0u);    // root: no field
  s.user = std::vector<std::uint32_t>{1000, 100, 50, 60};
  const std::string u = spawn_body(s);
  const std::string want = std::string(1, char(SBA_USER)) + std::string("\x10\0\0\0", 4) +
                           std::string("\xe8\x03\0\0\x64\0\0\0\x32\0\0\0\x3c\0\0\0", 16);
  BOOST_TEST(u.size() == b.size() + want.size());
  BOOST_TEST(u.substr(b.size()) == want); // uid, gid, then the groups, little-endian
}
