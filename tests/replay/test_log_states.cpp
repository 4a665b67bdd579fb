// log_states: fold_log over a whole log gives every sandbox the state a plain evolve fold of
// its own records gives — through the prefetching pipeline (sandboxes first seen inside its
// window, one sandbox twice in a row, duplicates delivered again), from a file_log_reader
// (records in file order) and from any event_log (partition by partition); a gap is a fault.
#define BOOST_TEST_MODULE log_states
#include <boost/test/unit_test.hpp>

#include "events/file_log.hpp"
#include "events/file_log_reader.hpp"
#include "replay/log_states.hpp"
#include "tests/projections/lifecycle_stream.hpp"
#include "tests/support/temp_dir.hpp"

#include <map>

using namespace sandboxd;
using sandboxd::test::temp_dir;

namespace {

constexpr std::int64_t k_t0 = 1'700'000'000'000'000'000;

// The states by a plain fold: each sandbox's events, in order, through evolve.
std::map<std::string, actors::sandbox_state> plain_fold(const std::vector<events::event>& evs) {
  std::map<std::string, actors::sandbox_state> out;
  for (const auto& e : evs) {
    auto [it, made] = out.try_emplace(e.sandbox_id, actors::initial_state(e.sandbox_id));
    it->second = actors::evolve(it->second, e);
  }
  return out;
}

void write(const std::string& dir, const std::vector<events::event>& evs, int partitions) {
  events::file_log_options o;
  o.dir = dir;
  o.partitions = partitions;
  events::file_log log(o);
  test::append_all(log, evs, 97); // many small batches: partitions interleave in the files
}

void check_equal(const replay::sandbox_states& got,
                 const std::map<std::string, actors::sandbox_state>& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (const auto& [id, s] : want) {
    const auto* g = got.find(id);
    BOOST_REQUIRE_MESSAGE(g != nullptr, id << " has no state");
    BOOST_CHECK_MESSAGE(*g == s, id << ": fold_log's state differs from evolve's");
  }
}

// A stream where sandboxes appear and repeat inside the fold's window: one sandbox's events
// several in a row, new sandboxes every few records, and every 7th event delivered twice.
std::vector<events::event> tricky_stream() {
  auto evs = test::mixed_stream(300, 7, k_t0);
  std::vector<events::event> out;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    out.push_back(evs[i]);
    if (i % 7 == 3)
      out.push_back(evs[i]); // a duplicate: a retried append
  }
  auto solo = test::mixed_stream(1, 1, k_t0);
  for (auto& e : solo) {
    e.sandbox_id = "sb-solo";
    e.event_id = "sb-solo:" + std::to_string(e.sequence);
    out.push_back(e); // all of one sandbox back to back, at the end
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(fold_log_from_a_file_log_reader_equals_evolve) {
  temp_dir dir("log-states");
  const auto evs = tricky_stream();
  write(dir / "log", evs, 8);
  events::file_log_reader reader(dir / "log");
  check_equal(replay::fold_log(reader), plain_fold(evs));
}

BOOST_AUTO_TEST_CASE(fold_log_from_any_event_log_equals_evolve) {
  temp_dir dir("log-states");
  const auto evs = tricky_stream();
  write(dir / "log", evs, 3);
  events::file_log_options o;
  o.dir = dir / "log";
  o.partitions = 3;
  events::file_log log(o); // not a reader: read partition by partition through event_log
  check_equal(replay::fold_log(log), plain_fold(evs));
}

BOOST_AUTO_TEST_CASE(visit_all_serves_every_record_once_in_each_partitions_order) {
  temp_dir dir("log-states");
  const auto evs = test::mixed_stream(200, 5, k_t0);
  write(dir / "log", evs, 4);
  events::file_log_reader reader(dir / "log");
  std::map<std::int32_t, std::int64_t> next;
  std::size_t seen = 0;
  reader.visit_all([&](std::int32_t p, std::int64_t offset, std::string_view, std::string_view) {
    BOOST_REQUIRE_EQUAL(offset, next[p]);
    ++next[p];
    ++seen;
    return true;
  });
  BOOST_CHECK_EQUAL(seen, evs.size());
  for (std::int32_t p = 0; p < 4; ++p)
    BOOST_CHECK_EQUAL(next[p], reader.end_offset(p).offset);
}

BOOST_AUTO_TEST_CASE(a_gap_in_a_sandboxs_sequence_is_a_fault) {
  temp_dir dir("log-states");
  auto evs = test::mixed_stream(20, 2, k_t0);
  std::erase_if(evs,
                [](const events::event& e) { return e.sandbox_id == "sb-3" && e.sequence == 4; });
  write(dir / "log", evs, 2);
  events::file_log_reader reader(dir / "log");
  BOOST_CHECK_THROW(replay::fold_log(reader), std::invalid_argument);
}
