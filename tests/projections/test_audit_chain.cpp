// The audit hash chain as pure functions: links, and a change to any field breaks them.
#define BOOST_TEST_MODULE audit_chain
#include <boost/test/unit_test.hpp>

#include "projections/audit_chain.hpp"

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
