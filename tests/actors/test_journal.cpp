// The journal against the embedded file log (behind faulty_log): rounds in order, each
// caller's own positions, a failed round's outcome — unknown included — passed to every
// caller in it, no recursion on a log that refuses at once, the acknowledged end offsets.
#define BOOST_TEST_MODULE journal
#include <boost/test/unit_test.hpp>

#include "actors/journal.hpp"
#include "events/file_log.hpp"
#include "tests/actors/faulty_log.hpp"
#include "tests/support/temp_dir.hpp"

#include <future>
#include <mutex>
#include <thread>

using namespace sandboxd::test;
namespace ev = sandboxd::events;
namespace ac = sandboxd::actors;
using namespace std::chrono_literals;

namespace {

struct journal_world {
  temp_dir dir{"journal"};
  ev::file_log file{ev::file_log_options{dir / "log", 4}};
  faulty_log log{file};
};

std::vector<ev::log_record> records(const std::string& key, int n, const std::string& tag) {
  std::vector<ev::log_record> out;
  for (int i = 0; i < n; ++i)
    out.push_back({key, tag + "-" + std::to_string(i)});
  return out;
}

// Refuses every append on the calling thread, before append() returns.
class refusing_log final : public ev::event_log {
public:
  std::int32_t partitions() const override { return 1; }
  std::string describe() const override { return "refusing log"; }

protected:
  void do_append(std::vector<ev::log_record>, ev::append_callback done) override {
    done(ev::append_result{{}, ev::error{ev::errc::unavailable, "refused"}});
  }
  ev::read_result do_read(std::int32_t, std::int64_t, std::size_t) override { return {}; }
  ev::offset_result do_end_offset(std::int32_t) override { return {0, std::nullopt}; }
  bool do_wait_for(std::int32_t, std::int64_t, std::chrono::milliseconds) override { return false; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(journal)

BOOST_AUTO_TEST_CASE(each_caller_gets_its_own_positions_and_rounds_keep_issue_order) {
  journal_world w;
  w.log.delay_completions(20ms); // later appends pile up behind the round in flight
  ac::journal j(w.log);
  std::mutex mu;
  std::vector<int> completed;
  std::vector<std::promise<ev::append_result>> results(30);
  for (int i = 0; i < 30; ++i) {
    const std::string key = "sb-" + std::to_string(i % 3);
    j.append(records(key, 1 + i % 2, "r" + std::to_string(i)), [&, i](ev::append_result r) {
      {
        std::lock_guard l(mu);
        completed.push_back(i);
      }
      results[static_cast<std::size_t>(i)].set_value(std::move(r));
    });
  }
  j.wait_idle();
  std::vector<int> in_order(30);
  for (int i = 0; i < 30; ++i)
    in_order[static_cast<std::size_t>(i)] = i;
  BOOST_TEST(completed == in_order, boost::test_tools::per_element());
  BOOST_TEST(j.rounds() < 30u);             // batched: at least some appends shared a round
  std::map<std::string, std::int64_t> last; // per key: offsets grow in append order
  for (int i = 0; i < 30; ++i) {
    auto r = results[static_cast<std::size_t>(i)].get_future().get();
    BOOST_REQUIRE(r.ok());
    BOOST_REQUIRE(r.positions.size() == static_cast<std::size_t>(1 + i % 2));
    const std::string key = "sb-" + std::to_string(i % 3);
    for (std::size_t k = 0; k < r.positions.size(); ++k) {
      const auto& p = r.positions[k];
      auto rr = w.file.read(p.partition, p.offset, 1);
      BOOST_REQUIRE(rr.records.size() == 1u);
      BOOST_TEST(rr.records[0].key == key);
      BOOST_TEST(rr.records[0].value == "r" + std::to_string(i) + "-" + std::to_string(k));
      auto it = last.find(key);
      BOOST_TEST((it == last.end() || it->second < p.offset));
      last[key] = p.offset;
    }
  }
  BOOST_TEST(j.records_appended() == 45u);
}

BOOST_AUTO_TEST_CASE(the_journal_completes_each_append_with_its_own_positions) {
  journal_world w;
  auto& log = w.file;
  ac::journal j(log);
  constexpr int k_appends = 200;
  std::vector<std::promise<ev::append_result>> done(k_appends);
  for (int i = 0; i < k_appends; ++i)
    j.append({{"key-" + std::to_string(i % 7), "a" + std::to_string(i)},
              {"key-" + std::to_string(i % 7), "b" + std::to_string(i)}},
             [&, i](ev::append_result r) { done[i].set_value(std::move(r)); });
  for (int i = 0; i < k_appends; ++i) {
    auto r = done[i].get_future().get();
    BOOST_REQUIRE(r.ok());
    BOOST_REQUIRE(r.positions.size() == 2u);
    auto a = log.read(r.positions[0].partition, r.positions[0].offset, 1);
    auto b = log.read(r.positions[1].partition, r.positions[1].offset, 1);
    BOOST_TEST(a.records.at(0).value == "a" + std::to_string(i));
    BOOST_TEST(b.records.at(0).value == "b" + std::to_string(i));
    BOOST_TEST(r.positions[1].offset > r.positions[0].offset);
  }
  j.wait_idle();
  BOOST_TEST(j.records_appended() == 2u * k_appends);
  BOOST_TEST(j.rounds() < static_cast<std::uint64_t>(k_appends)); // batched
}

BOOST_AUTO_TEST_CASE(a_round_of_unknown_fate_is_of_unknown_fate_for_every_caller_in_it) {
  for (auto fault : {append_fault::maybe_stored_lost, append_fault::maybe_stored_written,
                     append_fault::not_stored}) {
    BOOST_TEST_CONTEXT("fault " << to_string(fault)) {
      journal_world w;
      w.log.delay_completions(30ms);
      ac::journal j(w.log);
      std::promise<void> first_done;
      j.append(records("sb-a", 1, "first"), [&](ev::append_result) { first_done.set_value(); });
      // These three wait behind the first round and go out together as the second.
      w.log.fail_next(fault);
      std::vector<std::promise<ev::append_result>> results(3);
      for (int i = 0; i < 3; ++i)
        j.append(records("sb-" + std::to_string(i), 1, "second"), [&, i](ev::append_result r) {
          results[static_cast<std::size_t>(i)].set_value(r);
        });
      first_done.get_future().wait();
      j.wait_idle();
      BOOST_TEST(j.rounds() == 2u);
      for (auto& p : results) {
        auto r = p.get_future().get();
        BOOST_TEST(!r.ok());
        BOOST_TEST(r.positions.empty());
        BOOST_TEST(r.maybe_stored == (fault != append_fault::not_stored));
      }
    }
  }
}

// A callback that appends again while the log refuses at once: 20,000 rounds one after the
// other, all on this thread. Issued by recursion, each would sit deeper on the stack (and
// 200,000 overflowed it); issued by a loop, every callback runs at the same depth.
BOOST_AUTO_TEST_CASE(a_log_that_refuses_at_once_does_not_make_rounds_recurse) {
  refusing_log log;
  ac::journal j(log);
  int left = 20000, failures = 0;
  std::uintptr_t lowest = UINTPTR_MAX, highest = 0;
  std::function<void(ev::append_result)> again = [&](ev::append_result r) {
    int here = 0;
    const auto at = reinterpret_cast<std::uintptr_t>(&here);
    lowest = std::min(lowest, at);
    highest = std::max(highest, at);
    failures += !r.ok();
    if (--left > 0)
      j.append(records("sb-a", 1, "x"), again);
  };
  j.append(records("sb-a", 1, "x"), again);
  j.wait_idle();
  BOOST_TEST(failures == 20000);
  BOOST_TEST(j.rounds() == 20000u);
  BOOST_TEST(highest - lowest < 4096u,
             "the callbacks' stack spans " << highest - lowest << " bytes");
}

BOOST_AUTO_TEST_CASE(the_acknowledged_end_follows_completed_appends) {
  journal_world w;
  for (int i = 0; i < 5; ++i)
    BOOST_REQUIRE(w.file.append(records("sb-before", 1, "b")).get().ok());
  const auto p = w.file.partition_for("sb-before");
  ac::journal j(w.log);
  BOOST_TEST(j.acknowledged_end(p) == 5);
  std::promise<ev::append_result> done;
  j.append(records("sb-before", 3, "c"), [&](ev::append_result r) { done.set_value(r); });
  BOOST_REQUIRE(done.get_future().get().ok());
  BOOST_TEST(j.acknowledged_end(p) == 8);
  // A round that failed moves nothing.
  w.log.fail_next(append_fault::maybe_stored_written);
  std::promise<ev::append_result> failed;
  j.append(records("sb-before", 2, "d"), [&](ev::append_result r) { failed.set_value(r); });
  BOOST_TEST(failed.get_future().get().maybe_stored);
  BOOST_TEST(j.acknowledged_end(p) == 8);
  BOOST_TEST(w.file.end_offset(p).offset == 10);
}

BOOST_AUTO_TEST_SUITE_END()
