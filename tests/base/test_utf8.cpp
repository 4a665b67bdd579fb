// test_utf8 — which bytes are text (RFC 3629, as PostgreSQL checks it), and text_of's
// replacement of everything else, so that no tenant string can make PostgreSQL refuse a row.
#define BOOST_TEST_MODULE utf8
#include <boost/test/unit_test.hpp>

#include "base/utf8.hpp"
#include "tests/support/test_seed.hpp"

#include <random>
#include <string>

using namespace sandboxd;
using namespace std::string_literals;

namespace {
const std::string fffd = "\xEF\xBF\xBD";
}

BOOST_AUTO_TEST_CASE(well_formed_text_is_text_and_kept) {
  for (const std::string& s : {""s, "plain ascii"s, "caf\xC3\xA9"s, "\xE2\x82\xAC 5"s,
                               "\xF0\x9F\x98\x80"s, "\xF4\x8F\xBF\xBF"s, "\xED\x9F\xBF"s}) {
    BOOST_TEST(is_utf8(s), s);
    BOOST_TEST(is_text(s), s);
    BOOST_TEST(text_of(s) == s);
  }
}

BOOST_AUTO_TEST_CASE(malformed_sequences_are_not_text) {
  for (const std::string& s :
       {"\xFF"s, "\xC0\xAF"s /* overlong '/' */, "\xE0\x80\xAF"s /* overlong */,
        "\xED\xA0\x80"s /* surrogate */, "\xF4\x90\x80\x80"s /* past U+10FFFF */,
        "\xC3"s /* cut short */, "\x80"s /* lone continuation */, "\xF5\x80\x80\x80"s})
    BOOST_TEST(!is_utf8(s), s.size());
  BOOST_TEST(is_utf8("a\0b"s));
  BOOST_TEST(!is_text("a\0b"s));
}

BOOST_AUTO_TEST_CASE(text_of_replaces_each_bad_byte_and_each_nul) {
  BOOST_TEST(text_of("a\xFF"
                     "b"s) == "a" + fffd + "b");
  BOOST_TEST(text_of("k\0v"s) == "k" + fffd + "v");
  BOOST_TEST(text_of("\xC3"s) == fffd);
  BOOST_TEST(text_of("\xC0\xAF"s) == fffd + fffd);
  BOOST_TEST(text_of("caf\xC3\xA9\xFF"s) == "caf\xC3\xA9" + fffd);
}

BOOST_AUTO_TEST_CASE(text_of_any_bytes_is_text) {
  std::mt19937_64 rng(sandboxd::test::test_seed("text_of_any_bytes_is_text"));
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 24, '\0');
    for (auto& c : s)
      c = static_cast<char>(rng() % 4 == 0 ? 0x80 | (rng() % 64) : rng() % 256);
    const auto t = text_of(s);
    BOOST_TEST_REQUIRE(is_text(t));
    if (is_text(s))
      BOOST_TEST_REQUIRE(t == s);
  }
}
