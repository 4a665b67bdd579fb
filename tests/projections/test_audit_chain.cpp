// The audit hash chain as pure functions: links, and a change to any field breaks them; the
// SHA-256 and array-literal helpers it and the writer rely on.
#define BOOST_TEST_MODULE audit_chain
#include <boost/test/unit_test.hpp>

#include "projections/audit_chain.hpp"
#include "projections/pg_array.hpp"
#include "projections/sha256.hpp"

using namespace sandboxd::projections;

namespace {

audit_row sample(int64_t position) {
  audit_row r;
  r.tenant = "acme";
  r.partition = 3;
  r.position = position;
  r.event_id = "ev-" + std::to_string(position);
  r.occurred_at_ns = 1'700'000'000'000'000'000 + position;
  r.principal = "alice";
  r.action = "exec";
  r.sandbox_id = "sb_1";
  r.outcome = "accepted";
  r.detail = "echo hi";
  return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(first_row_links_to_the_genesis_hash) {
  auto r = sample(1);
  link(r, audit_genesis_hash());
  BOOST_TEST(r.prev_hash == std::string(64, '0'));
  BOOST_TEST(r.hash.size() == 64u);
  BOOST_TEST(r.hash == chain_hash(audit_genesis_hash(), r));
}

BOOST_AUTO_TEST_CASE(known_vector_pins_the_canonical_encoding) {
  audit_row r;
  r.tenant = "t";
  r.position = 1;
  // "sandboxd-audit-v1\n" then length:value\n for each field, in the documented order.
  BOOST_TEST(canonical_row(r) == "sandboxd-audit-v1\n1:t\n1:0\n1:1\n0:\n1:0\n0:\n0:\n0:\n0:\n0:\n");
}

BOOST_AUTO_TEST_CASE(changing_any_field_changes_the_hash) {
  auto base = sample(2);
  std::string h = chain_hash(audit_genesis_hash(), base);
  std::vector<audit_row> variants(10, base);
  variants[0].tenant = "acme2";
  variants[1].partition = 4;
  variants[2].position = 3;
  variants[3].event_id = "ev-x";
  variants[4].occurred_at_ns += 1;
  variants[5].principal = "mallory";
  variants[6].action = "pause";
  variants[7].sandbox_id = "sb_2";
  variants[8].outcome = "conflict";
  variants[9].detail = "echo hj";
  for (const auto& v : variants)
    BOOST_TEST(chain_hash(audit_genesis_hash(), v) != h);
  BOOST_TEST(chain_hash(std::string(63, '0') + "1", base) != h);
}

BOOST_AUTO_TEST_CASE(field_boundaries_cannot_be_shifted) {
  auto a = sample(1);
  auto b = sample(1);
  a.principal = "ab";
  a.action = "c";
  b.principal = "a";
  b.action = "bc";
  BOOST_TEST(canonical_row(a) != canonical_row(b));
}

BOOST_AUTO_TEST_CASE(sha256_matches_the_published_vectors_in_one_part_or_two) {
  // FIPS 180-2, appendix B.1 and B.2.
  BOOST_TEST(sha256_hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  const std::string expected = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
  BOOST_TEST(sha256_hex(two_blocks) == expected);
  BOOST_TEST(sha256_hex(two_blocks.substr(0, 7), two_blocks.substr(7)) == expected);
  BOOST_TEST(sha256_hex("", "abc") == sha256_hex("abc"));
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

BOOST_AUTO_TEST_CASE(pg_array_escapes_quotes_and_backslashes_anywhere_in_an_element) {
  pg_array a;
  a.add("plain").add("a\"b").add("\\").add("x\\y\"").add("");
  BOOST_TEST(a.str() == R"({"plain","a\"b","\\","x\\y\"",""})");
}
