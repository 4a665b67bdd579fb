// faulty_log.hpp — a test decorator around a real event log that fails appends the ways a
// real log can, on demand or at random, and delays completions.
//
// Faults (event_log.hpp's contract):
// - not_stored: nothing is written; the append fails with maybe_stored false.
// - maybe_stored_written: the batch is written to the inner log (and is durable there),
//   then the append fails with maybe_stored true — a Kafka delivery report that timed out
//   after the broker stored the records.
// - maybe_stored_lost: nothing is written; the append fails with maybe_stored true.
// - maybe_stored_late: the append fails with maybe_stored true at once, and the batch is
//   written to the inner log `late_by` later — a delayed produce request that lands after
//   the client gave up (beyond what a fenced Kafka producer allows: the actors must cope).
// Held late writes still held at destruction are written then.
// Failed appends complete on the decorator's own thread, never inside append(); a delay
// applies to every completion. End offsets and waits go straight to the inner log; reads
// too, perhaps cut short (limit_reads).
#pragma once

#include "events/event.hpp"
#include "events/event_log.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

namespace sandboxd::test {

enum class append_fault {
  none,
  not_stored,
  maybe_stored_written,
  maybe_stored_lost,
  maybe_stored_late,
};
inline constexpr std::size_t k_append_faults = 5;
std::string_view to_string(append_fault f);

class faulty_log final : public events::event_log {
public:
  using record_match = std::function<bool(const events::log_record&)>;

  explicit faulty_log(events::event_log& inner);
  // Runs every completion and late write still waiting (at once, in order), then stops its
  // thread. Nothing may append meanwhile.
  ~faulty_log() override;
  faulty_log(const faulty_log&) = delete;
  faulty_log& operator=(const faulty_log&) = delete;

  // Every append fails with `f` from now on (none: appends go through again).
  void fail_all(append_fault f);
  // The next append holding a record that `match` accepts (any append when empty) fails
  // with `f`; several calls queue up, each taking one append.
  void fail_next(append_fault f, record_match match = {});
  // From now on each append fails at random, drawn from a generator seeded with `seed`: with
  // probability `not_stored` so, with probability `maybe_stored` one of the three
  // maybe-stored ways (evenly).
  void fail_randomly(std::uint64_t seed, double not_stored, double maybe_stored);
  // Every completion waits this long (on the decorator's thread).
  void delay_completions(std::chrono::milliseconds d);
  // How long a maybe_stored_late batch waits before it is written.
  void set_late_by(std::chrono::milliseconds d);
  // From now on maybe_stored_late batches wait until release_late_writes() (then in order).
  void hold_late_writes();
  void release_late_writes();

  // Called (on the appending thread) for every append that is made to fail, with how.
  void on_injected(std::function<void(append_fault)> fn);

  // Appends that failed with `f` so far (none: appends passed through unharmed).
  std::uint64_t injected(append_fault f) const;
  // maybe_stored_late batches written to the inner log so far (their append completed).
  std::uint64_t landed_late() const { return landed_late_.load(); }

  std::int32_t partitions() const override { return inner_.partitions(); }
  // Reads return at most this many records (0: no limit), as a Kafka fetch may.
  void limit_reads(std::size_t n) { read_limit_ = n; }
  std::string describe() const override { return "faulty " + inner_.describe(); }

protected:
  void do_append(std::vector<events::log_record> batch, events::append_callback done) override;
  events::read_result do_read(std::int32_t p, std::int64_t from, std::size_t max) override {
    const std::size_t limit = read_limit_.load();
    return inner_.read(p, from, limit > 0 ? std::min(max, limit) : max);
  }
  events::offset_result do_end_offset(std::int32_t p) override { return inner_.end_offset(p); }
  bool do_wait_for(std::int32_t p, std::int64_t offset, std::chrono::milliseconds t) override {
    return inner_.wait_for(p, offset, t);
  }

private:
  using clock = std::chrono::steady_clock;
  append_fault choose(const std::vector<events::log_record>& batch); // pick + on_injected
  append_fault pick(const std::vector<events::log_record>& batch);
  void later(clock::duration after, std::function<void()> fn);
  std::chrono::milliseconds delay() const;
  // Runs `done` now, or after the completion delay on the decorator's thread.
  void finish(events::append_callback& done, events::append_result r);
  void run();

  events::event_log& inner_;
  mutable std::mutex mu_;
  append_fault all_ = append_fault::none;
  std::vector<std::pair<append_fault, record_match>> next_;
  bool random_ = false;
  std::mt19937_64 rng_;
  double p_not_stored_ = 0, p_maybe_stored_ = 0;
  std::chrono::milliseconds delay_{0};
  std::chrono::milliseconds late_by_{30};
  bool hold_late_ = false;
  std::vector<std::function<void()>> held_;
  std::array<std::atomic<std::uint64_t>, k_append_faults> injected_{};
  std::atomic<std::uint64_t> landed_late_{0};
  std::atomic<std::size_t> read_limit_{0};
  std::function<void(append_fault)> on_injected_;

  std::condition_variable cv_;
  std::multimap<std::pair<clock::time_point, std::uint64_t>, std::function<void()>> tasks_;
  std::uint64_t task_seq_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// A record_match for records whose event's payload is a `T` (ev::started, ...).
template <class T>
faulty_log::record_match holding() {
  return [](const events::log_record& r) {
    auto d = events::decode(r.value);
    return d.ok() && std::holds_alternative<T>(d.get().body);
  };
}

} // namespace sandboxd::test
