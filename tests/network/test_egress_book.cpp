// test_egress_book — who is behind each link, and which addresses sandboxd's resolver
// answered to which sandbox for which name (the fact a name rule rests on).
#define BOOST_TEST_MODULE egress_book
#include <boost/test/unit_test.hpp>

#include "network/egress_book.hpp"

using namespace sandboxd::network;
using namespace std::chrono_literals;

namespace {
ip_address addr(const char* t) {
  return *parse_address(t);
}
} // namespace

BOOST_AUTO_TEST_CASE(a_link_address_names_its_sandbox_until_it_is_removed) {
  egress_book b;
  b.add_link(addr("10.201.0.2"), {"sb-a", "t1"});
  b.add_link(addr("10.201.0.6"), {"sb-b", "t2"});
  BOOST_TEST(b.owner_of(addr("10.201.0.2"))->sandbox_id == "sb-a");
  BOOST_TEST(b.owner_of(addr("::ffff:10.201.0.6"))->tenant == "t2"); // mapped spelling
  BOOST_TEST(!b.owner_of(addr("10.201.0.3")));
  b.remove_sandbox("sb-a");
  BOOST_TEST(!b.owner_of(addr("10.201.0.2")));
  BOOST_TEST(b.links() == 1u);
}

BOOST_AUTO_TEST_CASE(an_answer_counts_only_for_its_sandbox_its_name_and_its_addresses) {
  egress_book b;
  const auto t0 = egress_book::clock::now();
  b.note_answer("sb-a", "allowed.test", {addr("198.51.100.2")}, 60s, t0);
  BOOST_TEST(b.answered("sb-a", "allowed.test", addr("198.51.100.2"), t0));
  BOOST_TEST(!b.answered("sb-a", "allowed.test", addr("198.51.100.3"), t0)); // forged Host
  BOOST_TEST(!b.answered("sb-b", "allowed.test", addr("198.51.100.2"), t0)); // another sandbox
  BOOST_TEST(!b.answered("sb-a", "other.test", addr("198.51.100.2"), t0));
  // Kept at least k_min_keep whatever the TTL, then gone.
  BOOST_TEST(b.answered("sb-a", "allowed.test", addr("198.51.100.2"), t0 + 300s));
  BOOST_TEST(
    !b.answered("sb-a", "allowed.test", addr("198.51.100.2"), t0 + egress_book::k_min_keep + 1s));
  // A later answer adds its addresses; removing the sandbox forgets them.
  b.note_answer("sb-a", "allowed.test", {addr("198.51.100.4")}, 60s, t0);
  BOOST_TEST(b.answered("sb-a", "allowed.test", addr("198.51.100.2"), t0));
  BOOST_TEST(b.answered("sb-a", "allowed.test", addr("198.51.100.4"), t0));
  b.remove_sandbox("sb-a");
  BOOST_TEST(!b.answered("sb-a", "allowed.test", addr("198.51.100.4"), t0));
}

BOOST_AUTO_TEST_CASE(the_names_kept_per_sandbox_are_bounded) {
  egress_book b;
  const auto t0 = egress_book::clock::now();
  for (std::size_t i = 0; i < egress_book::k_max_names + 10; ++i)
    b.note_answer("sb-a", "n" + std::to_string(i) + ".test", {addr("198.51.100.2")},
                  std::chrono::seconds(1000 + i), t0);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < egress_book::k_max_names + 10; ++i)
    kept += b.answered("sb-a", "n" + std::to_string(i) + ".test", addr("198.51.100.2"), t0);
  BOOST_TEST(kept == egress_book::k_max_names);
  BOOST_TEST(!b.answered("sb-a", "n0.test", addr("198.51.100.2"), t0)); // expires first: gone
}
