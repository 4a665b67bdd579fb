// find_landed against the embedded file log: which events of an append of unknown fate are
// in the log, their first copies, and a foreign event at one of their sequence numbers.
#include <boost/test/unit_test.hpp>

#include "actors/append_resolution.hpp"
#include "events/file_log.hpp"
#include "tests/support/temp_dir.hpp"

using namespace sandboxd::test;
namespace ev = sandboxd::events;
namespace ac = sandboxd::actors;

namespace {

const std::string k_id = "sb-resolve";

ev::event event_at(std::uint64_t sequence, const std::string& snapshot_id = "s") {
  ev::event e;
  e.sandbox_id = k_id;
  e.event_id = k_id + ":" + std::to_string(sequence);
  e.sequence = sequence;
  e.tenant = "acme";
  e.principal = "alice";
  e.occurred_at = ev::time_point(ev::nanoseconds(1'000'000'000 * static_cast<long>(sequence)));
  e.body = ev::snapshot_taken{snapshot_id + std::to_string(sequence), 10 * sequence};
  return e;
}

struct resolution_world {
  temp_dir dir{"resolution"};
  ev::file_log log{ev::file_log_options{dir / "log", 1}};

  void put(const ev::event& e) {
    BOOST_REQUIRE(log.append({{e.sandbox_id, ev::encode(e)}}).get().ok());
  }
  void put_other(int n) {
    for (int i = 0; i < n; ++i)
      BOOST_REQUIRE(log.append({{"sb-other", "not an event of " + k_id}}).get().ok());
  }
};

// Events 3, 4, 5: the append whose fate is unknown, after events 1 and 2 were applied.
std::vector<ev::event> expected() {
  return {event_at(3), event_at(4), event_at(5)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(find_landed)

BOOST_AUTO_TEST_CASE(finds_every_landed_event_among_other_sandboxes_records) {
  resolution_world w;
  w.put(event_at(1));
  w.put(event_at(2));
  w.put_other(2); // offsets 2, 3
  w.put(event_at(3));
  w.put_other(1);
  w.put(event_at(4));
  w.put(event_at(5));
  auto r = ac::find_landed(w.log, 0, 2, k_id, 2, expected());
  BOOST_TEST(!r.failure);
  BOOST_TEST(r.offsets == (std::vector<std::int64_t>{4, 6, 7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(finds_the_landed_prefix_and_the_first_copy_of_each_event) {
  resolution_world w;
  w.put(event_at(1));
  w.put(event_at(2));
  w.put(event_at(3)); // offset 2: a first try stored only event 3
  w.put(event_at(2)); // an older event's late copy
  w.put(event_at(3)); // a second copy of 3
  w.put(event_at(4));
  auto r = ac::find_landed(w.log, 0, 0, k_id, 2, expected());
  BOOST_TEST(!r.failure);
  BOOST_TEST(r.offsets == (std::vector<std::int64_t>{2, 5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(finds_nothing_before_where_it_starts_reading) {
  resolution_world w;
  w.put(event_at(3));
  w.put_other(3);
  auto r = ac::find_landed(w.log, 0, 1, k_id, 2, expected());
  BOOST_TEST(!r.failure);
  BOOST_TEST(r.offsets.empty());
}

BOOST_AUTO_TEST_CASE(another_event_at_an_expected_sequence_is_a_fault_naming_it) {
  resolution_world w;
  w.put(event_at(1));
  w.put(event_at(2));
  w.put(event_at(3, "foreign"));
  std::string message;
  try {
    ac::find_landed(w.log, 0, 0, k_id, 2, expected());
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("partition 0 offset 2") != std::string::npos, message);
  BOOST_TEST(message.find("event 3 of sandbox " + k_id) != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(an_event_beyond_the_append_is_a_fault) {
  resolution_world w;
  w.put(event_at(3));
  w.put(event_at(4));
  w.put(event_at(6));
  BOOST_CHECK_THROW(ac::find_landed(w.log, 0, 0, k_id, 2, expected()), std::runtime_error);
}

BOOST_AUTO_TEST_SUITE_END()
