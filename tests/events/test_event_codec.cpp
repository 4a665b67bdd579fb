// test_event_codec.cpp — the event codec: round trips, forward compatibility (unknown
// payloads and enum values), rejection of bytes that are not an Event, and the golden files
// in tests/golden/ (one record of every payload type, written once by the first version).
#define BOOST_TEST_MODULE event_codec
#include <boost/test/unit_test.hpp>

#include "events/event.hpp"
#include "tests/events/sample_events.hpp"
#include "tests/support/build_tree.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace sandboxd::events;
using sandboxd::events::testing::samples;
using sandboxd::events::testing::samples_v2;
namespace fs = std::filesystem;

namespace {

std::string golden_dir() {
  return sandboxd::test::source_tree() + "/tests/golden";
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Where the payload union's discriminant sits in a record this encoder wrote: after the
// segment table (8 bytes) and the root pointer (8), at byte 16 of Event's data section.
constexpr std::size_t k_discriminant_offset = 32;

std::uint16_t read_u16(const std::string& b, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}

} // namespace

BOOST_AUTO_TEST_SUITE(event_codec)

BOOST_AUTO_TEST_CASE(samples_cover_every_payload_type_in_schema_order) {
  auto s = samples();
  BOOST_TEST_REQUIRE(s.size() == payload_type_names().size());
  for (std::size_t i = 0; i < s.size(); ++i)
    BOOST_TEST(type_name(s[i].body) == payload_type_names()[i]);
}

BOOST_AUTO_TEST_CASE(every_event_decodes_to_what_was_encoded) {
  auto all = samples();
  for (auto& e : samples_v2())
    all.push_back(std::move(e));
  for (const auto& e : all) {
    BOOST_TEST_CONTEXT(type_name(e.body)) {
      auto bytes = encode(e);
      BOOST_TEST(bytes.size() % 8 == 0);
      auto d = decode(bytes);
      BOOST_TEST_REQUIRE(d.ok(), (d.ok() ? "" : d.failure().message));
      BOOST_TEST((d.get() == e));
    }
  }
}

BOOST_AUTO_TEST_CASE(an_event_with_empty_fields_round_trips) {
  event e;
  e.sandbox_id = "sb_1";
  e.sequence = 1;
  e.body = created{};
  auto d = decode(encode(e));
  BOOST_TEST_REQUIRE(d.ok());
  BOOST_TEST((d.get() == e));
}

BOOST_AUTO_TEST_CASE(an_event_larger_than_the_first_segment_spans_segments_and_round_trips) {
  auto e = samples()[9]; // exec_started
  auto& argv = std::get<exec_started>(e.body).argv;
  for (int i = 0; i < 5000; ++i)
    argv.push_back("--flag-" + std::to_string(i));
  auto bytes = encode(e);
  std::uint32_t segments_minus_one;
  std::memcpy(&segments_minus_one, bytes.data(), 4);
  BOOST_TEST(segments_minus_one > 0u);
  auto d = decode(bytes);
  BOOST_TEST_REQUIRE(d.ok(), (d.ok() ? "" : d.failure().message));
  BOOST_TEST((d.get() == e));
  // The encoder's scratch segment is clean again: a small event after it is unchanged.
  auto small = samples()[1];
  BOOST_TEST((decode(encode(small)).get() == small));
}

BOOST_AUTO_TEST_CASE(encode_to_appends_and_unaligned_bytes_decode) {
  auto s = samples();
  std::string buf = "x"; // puts the records at an odd address
  std::size_t first = encode_to(s[0], buf);
  std::size_t second = encode_to(s[9], buf);
  BOOST_TEST_REQUIRE(buf.size() == 1 + first + second);
  auto a = decode(buf.data() + 1, first);
  auto b = decode(buf.data() + 1 + first, second);
  BOOST_TEST_REQUIRE((a.ok() && b.ok()));
  BOOST_TEST((a.get() == s[0]));
  BOOST_TEST((b.get() == s[9]));
}

BOOST_AUTO_TEST_CASE(a_payload_from_a_newer_version_decodes_as_unknown_with_its_envelope) {
  auto e = samples()[1]; // started: union discriminant 1
  auto bytes = encode(e);
  BOOST_TEST_REQUIRE(read_u16(bytes, k_discriminant_offset) == 1);
  std::uint16_t newer = 40;
  std::memcpy(bytes.data() + k_discriminant_offset, &newer, 2);
  auto d = decode(bytes);
  BOOST_TEST_REQUIRE(d.ok());
  BOOST_TEST(type_name(d.get().body) == "unknown");
  BOOST_TEST(std::get<unknown>(d.get().body).ordinal == 40);
  BOOST_TEST(d.get().sandbox_id == e.sandbox_id);
  BOOST_TEST(d.get().sequence == e.sequence);
  BOOST_TEST((d.get().occurred_at == e.occurred_at));
  BOOST_CHECK_THROW(encode(d.get()), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(enum_values_from_a_newer_version_are_kept_as_numbers) {
  auto e = samples()[3];
  std::get<paused>(e.body).mode = static_cast<pause_mode>(7);
  auto d = decode(encode(e));
  BOOST_TEST_REQUIRE(d.ok());
  BOOST_TEST(static_cast<int>(std::get<paused>(d.get().body).mode) == 7);
  BOOST_TEST(to_string(std::get<paused>(d.get().body).mode) == "pause_mode(7)");
  BOOST_TEST(to_string(pause_mode::memory) == "memory");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_an_event_are_invalid_argument) {
  auto good = encode(samples()[0]);
  std::vector<std::pair<std::string, std::string>> bad{
    {"empty", ""},
    {"not a multiple of 8", good.substr(0, 13)},
    {"truncated", good.substr(0, good.size() - 8)},
    {"trailing bytes", good + std::string(8, '\0')},
    {"segment table claims too much", std::string("\0\0\0\0\xff\xff\xff\x0f", 8)},
  };
  event no_id = samples()[1];
  no_id.sandbox_id.clear();
  bad.emplace_back("no sandbox id", encode(no_id));
  event seq0 = samples()[1];
  seq0.sequence = 0;
  bad.emplace_back("sequence 0", encode(seq0));
  for (const auto& [what, bytes] : bad) {
    BOOST_TEST_CONTEXT(what) {
      auto d = decode(bytes);
      BOOST_TEST_REQUIRE(!d.ok());
      BOOST_TEST((d.failure().code == errc::invalid_argument));
      BOOST_TEST(d.failure().message.find("not a sandboxd Event") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_sha256_that_is_not_32_bytes_is_rejected) {
  auto bytes = encode(samples()[11]); // file_written
  // The digest is the last 32 bytes of the record; shorten its list pointer's count to 31.
  auto digest = samples()[11];
  const auto& d32 = std::get<file_written>(digest.body).sha256;
  auto at = bytes.find(std::string(reinterpret_cast<const char*>(d32.data()), 32));
  BOOST_TEST_REQUIRE(at != std::string::npos);
  bool patched = false;
  for (std::size_t p = 0; p + 8 <= at && !patched; p += 8) {
    std::uint64_t ptr;
    std::memcpy(&ptr, bytes.data() + p, 8);
    // A list pointer (tag 1) of bytes (size code 2) with 32 elements, pointing at `at`.
    if ((ptr & 3) == 1 && ((ptr >> 32) & 7) == 2 && (ptr >> 35) == 32 &&
        p + 8 + 8 * static_cast<std::int64_t>(static_cast<std::int32_t>(ptr) >> 2) == at) {
      ptr = (ptr & 0x7ffffffffULL) | (std::uint64_t{31} << 35);
      std::memcpy(bytes.data() + p, &ptr, 8);
      patched = true;
    }
  }
  BOOST_TEST_REQUIRE(patched);
  auto d = decode(bytes);
  BOOST_TEST_REQUIRE(!d.ok());
  BOOST_TEST(d.failure().message.find("sha256") != std::string::npos);
}

// The golden files are written once, by the version that introduced each payload, with
// SANDBOXD_WRITE_GOLDEN=1 (which only writes files that are missing); later versions only
// read them.
namespace {

// A record's golden file name: its payload's name; a template event's, its change's.
std::string golden_name(const event& e) {
  if (const auto* t = std::get_if<template_event>(&e.body))
    return "template_" + std::string(change_name(t->change));
  return std::string(type_name(e.body));
}

void check_golden(const std::vector<event>& events, const std::string& suffix) {
  const bool write = std::getenv("SANDBOXD_WRITE_GOLDEN") != nullptr;
  for (const auto& e : events) {
    auto name = golden_name(e);
    fs::path path = fs::path(golden_dir()) / (name + suffix);
    if (write && !fs::exists(path)) {
      std::ofstream(path, std::ios::binary) << encode(e);
      BOOST_TEST_MESSAGE("wrote " << path);
    }
    BOOST_TEST_CONTEXT(path) {
      BOOST_TEST_REQUIRE(fs::exists(path), "golden file missing");
      auto d = decode(read_file(path));
      BOOST_TEST_REQUIRE(d.ok(), (d.ok() ? "" : d.failure().message));
      BOOST_TEST(golden_name(d.get()) == name);
      BOOST_TEST((d.get() == e));
    }
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(every_golden_file_decodes_to_its_sample) {
  check_golden(samples(), ".bin");
}

// Payloads a later version extended: the extended record decodes whole, and the first
// version's file of the same payload (above) still decodes, with the new fields at defaults.
BOOST_AUTO_TEST_CASE(every_extended_golden_file_decodes_to_its_sample) {
  check_golden(samples_v2(), ".v2.bin");
}

// `created` naming its template content, `exec_started` its user (a v1 and v2 file decode
// with none).
BOOST_AUTO_TEST_CASE(created_with_template_content_decodes_from_its_golden_file) {
  check_golden(sandboxd::events::testing::samples_v3(), ".v3.bin");
}

// `created` by a warm pool, naming its key (older files decode with none).
BOOST_AUTO_TEST_CASE(created_by_a_pool_decodes_from_its_golden_file) {
  check_golden(sandboxd::events::testing::samples_v4(), ".v4.bin");
}

// `created` of a fork, naming its snapshot (older files decode with none).
BOOST_AUTO_TEST_CASE(created_of_a_fork_decodes_from_its_golden_file) {
  check_golden(sandboxd::events::testing::samples_v5(), ".v5.bin");
}

// Every change of the template stream, from its golden file.
BOOST_AUTO_TEST_CASE(every_template_change_decodes_from_its_golden_file) {
  check_golden(sandboxd::events::testing::template_samples(), ".bin");
}

BOOST_AUTO_TEST_SUITE_END()
