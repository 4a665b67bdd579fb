// file_log's append path: the queue appends wait in, the writer thread's group commit (one
// write and one fdatasync per batch, a failed one cut back out of the segment), and the
// completion thread that releases the appenders in commit order.
#include "events/file_log_impl.hpp"

#include <algorithm>

namespace sandboxd::events {

namespace fmt = file_log_format;
using namespace file_log_parts;

void file_log::impl::run_writer() {
  // Group commit without waiting: as soon as a sync returned, the writer takes everything
  // queued meanwhile and writes it, so the disk never idles while appends wait. Appenders
  // that wait for their acknowledgement before appending again then split into two halves
  // that take turns: one half's sync is in flight while the other half queues. (Waiting
  // for the half just released to come back makes bigger batches, but the disk idles
  // meanwhile, and with many appender threads on few CPUs it idled longer than a sync.)
  batch_buffer batch;
  std::optional<finished_batch> synced; // its appenders are not released yet: see commit()
  for (;;) {
    std::optional<error> failure;
    {
      std::unique_lock l(queue_mu);
      auto queued = [&] { return !pending.records.empty() || !full.empty(); };
      if (!queued() && synced) {
        l.unlock();
        release(std::move(*synced));
        synced.reset();
        l.lock();
      }
      work_cv.wait(l, [&] { return (queued() && callback_batches == 0) || closing; });
      if (!queued())
        break;
      batch.clear();
      if (!full.empty()) {
        std::swap(batch, full.front());
        full.pop_front();
        full_bytes -= batch.body.size();
      } else {
        std::swap(batch, pending);
        pending.number = batch.number + 1;
      }
      failure = failed;
    }
    space_cv.notify_all();
    commit(batch, synced, std::move(failure));
  }
  if (synced)
    release(std::move(*synced));
}

void file_log::impl::roll(std::uint64_t batch_size) {
  active->truncate(active->size()); // the zeroed room past the last batch
  try {
    active->write_index(active_entries);
  } catch (const log_fault&) {
    // Rebuilt by a scan at the next open.
  }
  active->seal();
  auto next = log_segment::create(
    options.dir, active->number() + 1,
    std::max<std::uint64_t>(options.segment_bytes, fmt::k_segment_header_size + batch_size));
  {
    std::unique_lock l(index_mu);
    segments.push_back(std::move(next));
    active = segments.back().get();
  }
  active_entries.clear();
}

void file_log::impl::commit(batch_buffer& batch, std::optional<finished_batch>& synced,
                            std::optional<error> failure) {
  bool maybe_stored = false;
  if (!failure) {
    bool writing = false; // the batch's bytes may be in the file
    try {
      char header[fmt::k_batch_header_size];
      fmt::make_batch_header(header, batch.body, static_cast<std::uint32_t>(batch.records.size()));
      const std::uint64_t batch_size = sizeof header + batch.body.size();
      if (active->size() + batch_size > active->capacity()) {
        if (active->size() > fmt::k_segment_header_size) {
          if (synced) { // a new segment takes two syncs: no reason to make them wait
            release(std::move(*synced));
            synced.reset();
          }
          roll(batch_size);
        } else
          active->remap(active->size() + batch_size); // no record points into it yet
      }
      const std::uint64_t base = active->size() + sizeof header;
      writing = true;
      active->write(header, sizeof header, batch.body);
      // The previous batch's appenders are released only now that this batch is written:
      // released first, they would take the CPUs from the writer before its next sync, and
      // come back in time to join this batch instead of the next one — the two halves of
      // the appenders would merge and the disk would idle while they come back.
      if (synced) {
        release(std::move(*synced));
        synced.reset();
      }
      active->sync_written();
      {
        std::unique_lock l(index_mu);
        const auto segment_index = static_cast<std::uint32_t>(segments.size() - 1);
        for (const auto& r : batch.records) {
          const auto position = static_cast<std::uint32_t>(base + r.body_position);
          locations[r.partition].push_back({segment_index, position});
          active_entries.push_back({static_cast<std::uint32_t>(r.partition), position,
                                    static_cast<std::uint64_t>(r.offset)});
        }
      }
      {
        std::lock_guard l(wait_mu);
        for (std::int32_t p = 0; p < partitions; ++p)
          published_end[p] = static_cast<std::int64_t>(locations[p].size());
      }
      wait_cv.notify_all();
    } catch (const log_fault& f) {
      std::string what = f.what();
      if (writing) {
        // The batch's bytes may be in the file and the page cache although its sync failed
        // (Linux marks the pages clean after a failed writeback): a reopen would find them.
        // The segment is cut back to what was synced, and that cut is synced, so the batch
        // is certainly not stored; if that fails too, its fate is unknown.
        try {
          active->truncate(active->size());
          what += "; the batch was cut from " + active->path() + ", so none of it is stored";
        } catch (const log_fault& g) {
          maybe_stored = true;
          what += "; cutting the batch back failed too (" + std::string(g.what()) +
                  "), so whether it is stored is unknown";
        }
      }
      failure = error{errc::unavailable,
                      what + "; the file log takes no more appends — reopen it (recovery "
                             "keeps every synced record)"};
      std::lock_guard l(queue_mu);
      failed = failure;
    }
  }
  if (synced) { // the write failed before releasing it
    release(std::move(*synced));
    synced.reset();
  }
  if (batch.appends.empty()) {
    // Only append_and_wait threads: released after the next batch is written (above).
    synced.emplace();
    synced->failure = std::move(failure);
    synced->maybe_stored = maybe_stored;
    synced->batch = std::move(batch);
  } else {
    // Callbacks run now; the writer waits for them (callback_batches) before its next batch.
    {
      std::lock_guard l(queue_mu);
      ++callback_batches;
    }
    release(finished_batch{std::move(batch), std::move(failure), maybe_stored});
  }
  batch = spare_buffer();
}

file_log::impl::batch_buffer file_log::impl::spare_buffer() {
  std::lock_guard l(done_mu);
  if (spare.empty())
    return {};
  batch_buffer b = std::move(spare.back());
  spare.pop_back();
  return b;
}

void file_log::impl::release(finished_batch done) {
  {
    std::lock_guard l(done_mu);
    finished.push_back(std::move(done));
  }
  done_cv.notify_one();
}

void file_log::impl::run_completer() {
  for (;;) {
    finished_batch b;
    {
      std::unique_lock l(done_mu);
      done_cv.wait(l, [&] { return !finished.empty() || writer_done; });
      if (finished.empty())
        return;
      b = std::move(finished.front());
      finished.pop_front();
    }
    const std::uint64_t number = b.batch.number;
    if (b.failure && first_failed_batch.load() > number)
      first_failed_batch.store(number);
    if (b.maybe_stored)
      maybe_stored_batch.store(number);
    // Waiters read the signal before finished_batches, and it moves after: a waiter never
    // misses the wake-up of its batch.
    finished_batches.store(number);
    if (b.batch.waiting > 0) {
      auto& signal = batch_signal[number % batch_signal.size()];
      signal.fetch_add(1);
      file_log_parts::futex_wake_all(signal);
    }
    for (auto& a : b.batch.appends) {
      append_result r;
      if (b.failure) {
        r.failure = b.failure;
        r.maybe_stored = b.maybe_stored;
      } else {
        r.positions.reserve(a.count);
        for (std::uint32_t i = a.first; i < a.first + a.count; ++i)
          r.positions.push_back({b.batch.records[i].partition, b.batch.records[i].offset});
      }
      a.done(std::move(r));
    }
    if (!b.batch.appends.empty()) {
      {
        std::lock_guard l(queue_mu);
        --callback_batches;
      }
      work_cv.notify_one();
    }
    b.batch.clear();
    std::lock_guard l(done_mu);
    if (spare.size() < 4)
      spare.push_back(std::move(b.batch));
  }
}

std::optional<error> file_log::impl::enqueue(const std::vector<log_record>& batch,
                                             append_callback& done,
                                             std::vector<record_position>& positions,
                                             std::uint64_t& number) {
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& r = batch[i];
    std::string problem;
    if (r.key.empty())
      problem = "has an empty key; every record needs a key (its sandbox id)";
    else if (r.key.size() > k_max_key_bytes)
      problem = "has a key of " + std::to_string(r.key.size()) + " bytes; the limit is " +
                std::to_string(k_max_key_bytes);
    else if (r.value.size() > k_max_value_bytes)
      problem = "has a value of " + std::to_string(r.value.size()) + " bytes; the limit is " +
                std::to_string(k_max_value_bytes);
    if (!problem.empty())
      return error{errc::invalid_argument,
                   "record " + std::to_string(i) + " of the batch " + problem};
    bytes += fmt::record_size(r.key.size(), r.value.size());
  }
  if (bytes > fmt::k_max_batch_body_bytes)
    return error{errc::invalid_argument,
                 "the batch's " + std::to_string(batch.size()) + " records take " +
                   std::to_string(bytes) + " bytes in " + describe() +
                   ", more than the largest batch it can hold (" +
                   std::to_string(fmt::k_max_batch_body_bytes) +
                   " bytes, a 2 GiB segment); split it into smaller appends"};
  // Everything that needs no lock is done before taking it.
  positions.resize(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i)
    positions[i].partition = events::partition_for(batch[i].key, partitions);
  std::unique_lock l(queue_mu);
  // A completion that appends must not wait for room: completions would stall behind it.
  if (std::this_thread::get_id() != completer_id)
    space_cv.wait(l, [&] {
      return pending.body.size() + full_bytes < options.max_pending_bytes || closing || failed;
    });
  if (failed)
    return failed;
  if (closing)
    return error{errc::unavailable, describe() + " is closed; it takes no more appends"};
  if (!pending.records.empty() && pending.body.size() + bytes > fmt::k_max_batch_body_bytes) {
    // With this append the batch would be larger than the format holds: it is closed, and
    // this append starts the next.
    const std::uint64_t next = pending.number + 1;
    full_bytes += pending.body.size();
    full.push_back(std::move(pending));
    pending = batch_buffer{};
    pending.number = next;
  }
  pending.body.reserve(pending.body.size() + bytes);
  const auto first = static_cast<std::uint32_t>(pending.records.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& r = batch[i];
    auto& pos = positions[i];
    pos.offset = next_offset[pos.partition]++;
    pending.records.push_back(
      {pos.partition, pos.offset, static_cast<std::uint32_t>(pending.body.size())});
    fmt::append_record(pending.body, static_cast<std::uint32_t>(pos.partition),
                       static_cast<std::uint64_t>(pos.offset), r.key, r.value);
  }
  if (done)
    pending.appends.push_back({std::move(done), first, static_cast<std::uint32_t>(batch.size())});
  else
    ++pending.waiting;
  number = pending.number;
  const bool from_callback = callback_batches > 0;
  l.unlock();
  if (!from_callback) // otherwise the completion thread wakes the writer after the callbacks
    work_cv.notify_one();
  return std::nullopt;
}

} // namespace sandboxd::events
