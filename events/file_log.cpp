// file_log: opening and closing the log, and its public member functions (appends hand
// over to file_log_writer.cpp; reads check every record). The parts: file_log_impl.hpp.
#include "events/file_log_impl.hpp"

#include <algorithm>
#include <cstring>

namespace sandboxd::events {

namespace fmt = file_log_format;
using namespace file_log_parts;

file_log::impl::impl(const file_log_options& o) : options(o) {
  if (options.dir.empty())
    throw log_fault("file log: no data directory given");
  if (options.partitions <= 0)
    throw log_fault("file log: the partition count must be positive, not " +
                    std::to_string(options.partitions));
  options.segment_bytes = std::clamp<std::uint64_t>(options.segment_bytes, k_min_segment_bytes,
                                                    fmt::k_max_segment_bytes / 4);
  file_log_parts::create_directory_durably(options.dir);
  pending.number = 1;
  lock_directory();
  try {
    open_segments();
  } catch (...) {
    ::close(lock_fd);
    throw;
  }
  completer = std::thread([this] { run_completer(); });
  completer_id = completer.get_id();
  writer = std::thread([this] { run_writer(); });
}

file_log::impl::~impl() {
  {
    std::lock_guard l(queue_mu);
    closing = true;
  }
  work_cv.notify_all();
  space_cv.notify_all();
  if (writer.joinable())
    writer.join();
  {
    std::lock_guard l(done_mu);
    writer_done = true;
  }
  done_cv.notify_all();
  if (completer.joinable())
    completer.join();
  // Closed cleanly, the active segment ends with its last batch: the zeroed room the writer
  // kept ahead of its batches is cut (after a crash, the next open cuts it).
  if (active != nullptr && !failed) {
    try {
      active->truncate(active->size());
    } catch (const log_fault&) {
      // The next open cuts it.
    }
  }
  {
    std::lock_guard l(wait_mu);
    closed = true;
  }
  wait_cv.notify_all();
  segments.clear();
  if (lock_fd >= 0)
    ::close(lock_fd); // releases the flock
}

file_log::file_log(const file_log_options& options) : impl_(std::make_unique<impl>(options)) {}

file_log::~file_log() = default;

std::int32_t file_log::partitions() const {
  return impl_->partitions;
}

const file_log_recovery& file_log::recovery() const {
  return impl_->recovery;
}

std::string file_log::describe() const {
  return impl_->describe();
}

void file_log::do_append(std::vector<log_record> batch, append_callback done) {
  std::vector<record_position> positions;
  std::uint64_t number;
  if (auto refusal = impl_->enqueue(batch, done, positions, number))
    done(append_result{{}, std::move(refusal)});
}

append_result file_log::append_and_wait(const std::vector<log_record>& batch) {
  auto& m = *impl_;
  append_result out;
  if (std::this_thread::get_id() == m.completer_id) {
    out.failure = error{errc::invalid_argument,
                        "append_and_wait was called from a completion callback of " + describe() +
                          ", which would wait for itself; append with a callback there"};
    return out;
  }
  if (batch.empty())
    return out;
  append_callback none;
  std::uint64_t number;
  if (auto refusal = m.enqueue(batch, none, out.positions, number)) {
    out.positions.clear();
    out.failure = std::move(refusal);
    return out;
  }
  // The signal is read before the outcome and the completion thread bumps it after
  // publishing the outcome, so a wait never misses the wake-up of this batch.
  auto& signal = m.batch_signal[number % m.batch_signal.size()];
  for (;;) {
    const std::uint32_t seen = signal.load();
    if (m.finished_batches.load() >= number)
      break;
    file_log_parts::futex_wait(signal, seen);
  }
  if (number >= m.first_failed_batch.load()) {
    out.positions.clear();
    out.maybe_stored = m.maybe_stored_batch.load() == number;
    std::lock_guard l(m.queue_mu);
    out.failure = m.failed;
  }
  return out;
}

read_result file_log::do_read(std::int32_t partition, std::int64_t from, std::size_t max) {
  auto& m = *impl_;
  read_result out;
  struct where {
    const log_segment* segment;
    std::uint32_t position;
  };
  std::vector<where> places;
  {
    std::shared_lock l(m.index_mu);
    const auto& locs = m.locations[partition];
    const auto end = static_cast<std::int64_t>(locs.size());
    if (from >= end)
      return out;
    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(end - from, max));
    places.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& loc = locs[from + i];
      places.push_back({m.segments[loc.segment].get(), loc.position});
    }
  }
  out.records.reserve(places.size());
  std::int64_t offset = from;
  for (const auto& w : places) {
    fmt::record_view r;
    const std::uint64_t limit = w.segment->size();
    if (w.position >= limit ||
        !fmt::read_record(w.segment->data() + w.position, limit - w.position, r))
      m.corrupt(*w.segment, w.position,
                "partition " + std::to_string(partition) + " offset " + std::to_string(offset) +
                  ": the record's CRC-32C does not match its bytes");
    if (r.partition != static_cast<std::uint32_t>(partition) ||
        r.offset != static_cast<std::uint64_t>(offset))
      m.corrupt(*w.segment, w.position,
                "partition " + std::to_string(partition) + " offset " + std::to_string(offset) +
                  ": the record there is partition " + std::to_string(r.partition) + " offset " +
                  std::to_string(r.offset));
    out.records.push_back({partition, offset, std::string(r.key), std::string(r.value)});
    ++offset;
  }
  return out;
}

offset_result file_log::do_end_offset(std::int32_t partition) {
  auto& m = *impl_;
  std::lock_guard l(m.wait_mu);
  return {m.published_end[partition], std::nullopt};
}

bool file_log::do_wait_for(std::int32_t partition, std::int64_t offset,
                           std::chrono::milliseconds timeout) {
  auto& m = *impl_;
  std::unique_lock l(m.wait_mu);
  m.wait_cv.wait_for(l, timeout, [&] { return m.published_end[partition] > offset || m.closed; });
  return m.published_end[partition] > offset;
}

} // namespace sandboxd::events
