// file_log_impl.hpp — the inside of file_log, shared by the files that implement it (not
// part of the interface; include only from events/file_log*.cpp):
//   file_log.cpp            opening and closing, and the public member functions (reads);
//   file_log_directory.cpp  the data directory: its creation, LOCK and META;
//   file_log_recovery.cpp   opening the segments: indexes, scans, torn tails, damage;
//   file_log_writer.cpp     the append queue, the writer's group commit, the completion
//                           thread.
#pragma once

#include "events/file_log.hpp"
#include "events/file_log_format.hpp"
#include "events/file_log_segment.hpp"

#include <array>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <deque>
#include <linux/futex.h>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sandboxd::events {

namespace file_log_parts {

inline constexpr std::size_t k_max_key_bytes = std::size_t{64} << 10;
inline constexpr std::size_t k_max_value_bytes = std::size_t{64} << 20;
inline constexpr std::uint64_t k_min_segment_bytes = 4096;
inline constexpr const char* k_meta_first_line = "sandboxd file log 1";

// Where a record lies: an index into the log's segments and a byte position in it.
struct location {
  std::uint32_t segment;
  std::uint32_t position;
};

// One queued record: already encoded in the pending body, its offset already assigned.
struct queued_record {
  std::int32_t partition;
  std::int64_t offset;
  std::uint32_t body_position; // within the body of its batch
};

// An append with a callback: its records are [first, first + count) of its batch's records.
// Appends that wait (append_and_wait) have none; they watch the batch numbers instead.
struct pending_append {
  append_callback done;
  std::uint32_t first;
  std::uint32_t count;
};

// One group commit's worth of appends, filled under the queue lock and then handed whole
// to the writer (and, with its outcome, to the completion thread).
struct batch_buffer {
  std::uint64_t number = 0;
  std::string body;
  std::vector<queued_record> records;
  std::vector<pending_append> appends; // the ones with a callback
  std::size_t waiting = 0;             // appends without a callback (append_and_wait)

  void clear() {
    body.clear();
    records.clear();
    appends.clear();
    waiting = 0;
  }
};

// Wakes every thread in futex_wait on `word`. One system call whatever their number: the
// kernel queues the wake-ups of one CPU together. (std::atomic::wait is not used: before
// sleeping it yields the CPU a few times, a context switch each with 64 appenders.)
inline void futex_wake_all(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
}

// Sleeps while `word` holds `seen` (returns at once if it no longer does, or spuriously).
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr,
            nullptr, 0);
}

// Creates `dir` and its missing parents, each made durable (file_log_directory.cpp).
void create_directory_durably(const std::string& dir);

} // namespace file_log_parts

struct file_log::impl {
  using location = file_log_parts::location;
  using batch_buffer = file_log_parts::batch_buffer;
  file_log_options options;
  std::int32_t partitions = 0;
  int lock_fd = -1;
  file_log_recovery recovery;

  // Appends not yet taken by the writer. Offsets are assigned here, in queue order, which
  // is also the order the writer stores them in. `pending.number` is the number of the
  // batch they will be committed in (batches are numbered from 1 in commit order).
  std::mutex queue_mu;
  std::condition_variable work_cv;  // the writer waits for appends
  std::condition_variable space_cv; // appenders wait for max_pending_bytes
  batch_buffer pending;
  // Batches closed before the writer took them, because the next append would have taken
  // them past the largest batch the format holds; the writer takes them before `pending`.
  std::deque<batch_buffer> full;
  std::size_t full_bytes = 0;
  std::vector<std::int64_t> next_offset; // per partition, queued records included
  bool closing = false;
  std::optional<error> failed; // set once a write or sync failed

  // Appenders in append_and_wait: batch `n` is over (synced, or failed) once
  // `finished_batches >= n`; it failed when `n >= first_failed_batch`. After publishing a
  // batch's outcome the completion thread bumps `batch_signal[n % 4]` and wakes every
  // thread waiting on it: one wake-up call per group commit, not one per append.
  std::atomic<std::uint64_t> finished_batches{0};
  std::atomic<std::uint64_t> first_failed_batch{UINT64_MAX};
  std::atomic<std::uint64_t> maybe_stored_batch{UINT64_MAX}; // the one whose fate is unknown
  std::array<std::atomic<std::uint32_t>, 4> batch_signal{};

  // What readers see: only records whose batch was synced.
  mutable std::shared_mutex index_mu;
  std::vector<std::unique_ptr<log_segment>> segments;
  std::vector<std::vector<location>> locations; // per partition, by offset

  std::mutex wait_mu;
  std::condition_variable wait_cv;
  std::vector<std::int64_t> published_end; // per partition
  bool closed = false;

  // Writer-thread state.
  log_segment* active = nullptr;
  std::vector<file_log_format::index_entry> active_entries;
  std::thread writer;

  // Appenders are released (callbacks run, append_and_wait returns) on their own thread,
  // in commit order, so the writer starts the next write as soon as a sync returns: waking
  // 30 threads costs about as long as a sync on a 2-CPU VM.
  struct finished_batch {
    batch_buffer batch;
    std::optional<error> failure;
    bool maybe_stored = false; // the failure left the batch's fate unknown
  };
  std::mutex done_mu;
  std::condition_variable done_cv;
  std::deque<finished_batch> finished;
  std::vector<batch_buffer> spare; // buffers the completion thread is done with
  bool writer_done = false;
  std::thread completer;
  std::thread::id completer_id;
  // Synced batches with callbacks that the completion thread has not finished running
  // (under queue_mu). The writer takes no new batch while there are any: an append's
  // callback that appends again (as the journal's does) joins the very next batch, together
  // with every other callback's append, instead of the first of them being synced alone
  // and the appenders splitting into groups that take turns.
  int callback_batches = 0;

  explicit impl(const file_log_options& o);
  ~impl();
  void lock_directory();
  void read_or_create_meta(bool has_segments);
  // Opening, in steps: the segment files there are (numbered from 0 without a gap); each
  // one's records, from its index or a scan that cuts a torn tail off the last segment and
  // refuses damage; the records' places, checked for dense offsets.
  void open_segments();
  std::vector<std::uint64_t> segment_numbers() const;
  std::vector<file_log_format::index_entry> recover_segment(log_segment& seg, bool last);
  void add_locations(const log_segment& seg, std::uint32_t segment_index,
                     const std::vector<file_log_format::index_entry>& entries);
  void run_writer();
  void run_completer();
  // Writes and syncs `batch`, releasing `synced` (the previous batch) between the write and
  // the sync; then `synced` is this batch, and `batch` an empty buffer.
  // `failure`: the log failed before (the batch is not written; its appends fail).
  void commit(batch_buffer& batch, std::optional<finished_batch>& synced,
              std::optional<error> failure);
  // Hands a synced (or failed) batch to the completion thread, which releases its
  // appenders.
  void release(finished_batch done);
  batch_buffer spare_buffer(); // an empty buffer, with room from an earlier batch if any
  // Checks `batch` and queues it; returns the refusal instead when the batch is invalid
  // or the log takes no more appends. `done` may be empty (append_and_wait).
  std::optional<error> enqueue(const std::vector<log_record>& batch, append_callback& done,
                               std::vector<record_position>& positions, std::uint64_t& number);
  std::string describe() const { return "file log " + options.dir; }
  void roll(std::uint64_t batch_size);
  [[noreturn]] void corrupt(const log_segment& s, std::uint64_t position,
                            const std::string& problem) const;
};

} // namespace sandboxd::events
