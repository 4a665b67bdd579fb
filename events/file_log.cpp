#include "events/file_log.hpp"

#include "events/file_log_format.hpp"
#include "events/file_log_segment.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <linux/futex.h>
#include <mutex>
#include <shared_mutex>
#include <sys/file.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace sandboxd::events {

namespace fmt = file_log_format;

namespace {

constexpr std::size_t k_max_key_bytes = std::size_t{64} << 10;
constexpr std::size_t k_max_value_bytes = std::size_t{64} << 20;
constexpr std::uint64_t k_min_segment_bytes = 4096;
constexpr const char* k_meta_first_line = "sandboxd file log 1";

// The end of the last non-zero byte in [from, end) of `data`, or `from` when all are zero.
std::uint64_t nonzero_end(const char* data, std::uint64_t from, std::uint64_t end) {
  while (end > from && data[end - 1] == 0)
    --end;
  return end;
}

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
void futex_wake_all(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
}

// Sleeps while `word` holds `seen` (returns at once if it no longer does, or spuriously).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr,
            nullptr, 0);
}

std::string read_small_file(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  ssize_t r;
  while ((r = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(r));
  ::close(fd);
  return out;
}

void write_file_durably(const std::string& dir, const std::string& name,
                        const std::string& content) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw log_fault("file log: cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()) &&
            ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw log_fault("file log: cannot write " + path + ": " + std::strerror(ok ? errno : err));
  sync_directory(dir);
}

// Creates `dir` and its missing parents, each made durable: every directory created is
// fsynced, and so is the parent it was created in.
void create_directory_durably(const std::string& dir) {
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (auto p = std::filesystem::absolute(dir, ec); !ec && !p.empty(); p = p.parent_path()) {
    if (std::filesystem::exists(p, ec))
      break;
    missing.push_back(p);
    if (p == p.parent_path())
      break;
  }
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw log_fault("file log: cannot create " + dir + ": " + ec.message());
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    sync_directory(it->string());
    sync_directory(it->parent_path().string());
  }
}

// Whether the index `entries` of a sealed segment accounts for all of its `file_size`
// bytes: its last record ends where the file ends. (The index is not synced; one that
// does not match its segment is not trusted, and the segment is scanned instead.)
bool index_covers(const log_segment& s, const std::vector<fmt::index_entry>& entries,
                  std::uint64_t file_size) {
  if (entries.empty())
    return file_size == fmt::k_segment_header_size;
  const std::uint64_t last = entries.back().position;
  fmt::record_view r;
  return last < file_size && fmt::read_record(s.data() + last, file_size - last, r) &&
         last + r.size == file_size;
}

} // namespace

struct file_log::impl {
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
  std::vector<fmt::index_entry> active_entries;
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
  void open_segments();
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

file_log::impl::impl(const file_log_options& o) : options(o) {
  if (options.dir.empty())
    throw log_fault("file log: no data directory given");
  if (options.partitions <= 0)
    throw log_fault("file log: the partition count must be positive, not " +
                    std::to_string(options.partitions));
  options.segment_bytes = std::clamp<std::uint64_t>(options.segment_bytes, k_min_segment_bytes,
                                                    fmt::k_max_segment_bytes / 4);
  create_directory_durably(options.dir);
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

void file_log::impl::lock_directory() {
  const std::string path = options.dir + "/LOCK";
  lock_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0)
    throw log_fault("file log: cannot open " + path + ": " + std::strerror(errno));
  // The lock belongs to the open file: a child the holder forked shares it until that
  // child execs (every descriptor here is close-on-exec) or exits. When the holder was
  // killed, such a child may still hold it for a moment: while the pid in LOCK is gone,
  // wait a little for it to let go.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EINTR)
      continue;
    std::string holder;
    bool holder_gone = false;
    if (err == EWOULDBLOCK) {
      holder = read_small_file(path);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
        holder.pop_back();
      char* end = nullptr;
      const long pid = holder.empty() ? 0 : std::strtol(holder.c_str(), &end, 10);
      holder_gone =
        pid > 0 && end && *end == '\0' && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
      if (holder_gone && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
    }
    ::close(lock_fd);
    lock_fd = -1;
    if (err == EWOULDBLOCK && holder_gone)
      throw log_fault("file log " + options.dir + " is locked by a process that pid " + holder +
                      " (no longer running) started; find it with `fuser " + path +
                      "` and stop it");
    if (err == EWOULDBLOCK)
      throw log_fault("file log " + options.dir + " is in use by another process (pid " +
                      (holder.empty() ? std::string("unknown") : holder) + " holds " + path +
                      "); stop it first, or give this one another data "
                      "directory");
    throw log_fault("file log: cannot lock " + path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd, 0) != 0 || ::pwrite(lock_fd, pid.data(), pid.size(), 0) < 0) {
    // Only the holder's pid in error messages is lost; the lock itself holds.
  }
}

void file_log::impl::read_or_create_meta(bool has_segments) {
  const std::string path = options.dir + "/META";
  std::string meta = read_small_file(path);
  if (meta.empty()) {
    if (has_segments)
      throw log_fault("file log: " + path +
                      " is missing but the directory holds segments; "
                      "restore META (it states the partition count) before opening the log");
    partitions = options.partitions;
    write_file_durably(options.dir, "META",
                       std::string(k_meta_first_line) + "\npartitions " +
                         std::to_string(partitions) + "\n");
    return;
  }
  const std::string prefix = std::string(k_meta_first_line) + "\npartitions ";
  if (meta.compare(0, prefix.size(), prefix) != 0)
    throw log_fault("file log: " + path +
                    " is not the META file of a sandboxd file log "
                    "(version 1)");
  partitions = std::atoi(meta.c_str() + prefix.size());
  if (partitions <= 0)
    throw log_fault("file log: " + path + " states no valid partition count");
  if (partitions != options.partitions)
    throw log_fault("file log " + options.dir + " has " + std::to_string(partitions) +
                    " partitions, but was opened with " + std::to_string(options.partitions) +
                    "; the count of an existing log cannot change (keys would move between "
                    "partitions)");
}

void file_log::impl::corrupt(const log_segment& s, std::uint64_t position,
                             const std::string& problem) const {
  throw log_fault("file log: corrupt segment " + s.path() + " at byte " + std::to_string(position) +
                  ": " + problem +
                  ". Acknowledged records may be damaged; restore the log from a backup or "
                  "replica (the log does not skip damage)");
}

void file_log::impl::open_segments() {
  std::vector<std::uint64_t> numbers;
  for (const auto& entry : std::filesystem::directory_iterator(options.dir)) {
    std::uint64_t n;
    if (fmt::parse_segment_file_name(entry.path().filename().string(), n))
      numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  read_or_create_meta(!numbers.empty());
  next_offset.assign(partitions, 0);
  published_end.assign(partitions, 0);
  locations.resize(partitions);
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (numbers[i] != i)
      throw log_fault("file log: segment " + options.dir + "/" + fmt::segment_file_name(i) +
                      " is missing (the directory holds " + fmt::segment_file_name(numbers[i]) +
                      " instead); records before it are lost — restore it from a backup");
  }
  if (numbers.empty()) {
    segments.push_back(log_segment::create(options.dir, 0, options.segment_bytes));
    numbers.push_back(0);
  } else {
    for (std::size_t i = 0; i < numbers.size(); ++i) {
      const bool last = i + 1 == numbers.size();
      auto seg = log_segment::open(options.dir, numbers[i], last, last ? options.segment_bytes : 0);
      const std::uint64_t file_size = seg->size();
      std::vector<fmt::index_entry> entries;
      bool indexed = !last && seg->read_index(entries) && index_covers(*seg, entries, file_size);
      if (!indexed) {
        ++recovery.segments_scanned;
        if (!fmt::check_segment_header(seg->data(), file_size, seg->number())) {
          if (!last || file_size > fmt::k_segment_header_size)
            corrupt(*seg, 0, "no valid segment header");
          // A crash while the last segment was being created: it holds no record.
          seg->rewrite_header();
        } else {
          auto scan = scan_segment(*seg, file_size);
          if (scan.result == segment_scan::outcome::corrupt)
            corrupt(*seg, scan.bad_position, scan.problem);
          // A roll cuts a segment to its last batch and syncs that before it creates the
          // next segment: a sealed segment was synced whole, so no crash leaves anything
          // but whole batches in it — not even zeros.
          if (scan.result != segment_scan::outcome::clean && !last)
            corrupt(*seg, scan.bad_position,
                    "the segment is sealed (" + fmt::segment_file_name(numbers[i + 1]) +
                      " follows it), so all of it was synced, yet it holds " +
                      std::to_string(file_size - scan.bad_position) +
                      " bytes there that are no whole batch (" + scan.problem + ")");
          if (scan.result == segment_scan::outcome::torn_tail) {
            // Zeros (the writer's zeroed room, or what a file system leaves after a power
            // loss) are cut too, but counted as torn only up to the last non-zero byte.
            const std::uint64_t data_end = nonzero_end(seg->data(), scan.valid_end, file_size);
            seg->truncate(scan.valid_end);
            if (data_end > scan.valid_end) {
              recovery.truncated_bytes = data_end - scan.valid_end;
              recovery.truncated_segment = seg->path();
            }
          }
          entries = std::move(scan.entries);
          if (!last) {
            try {
              seg->write_index(entries);
            } catch (const log_fault&) {
              // The index only saves the next open a scan.
            }
          }
        }
        if (last)
          seg->remove_index();
      }
      const auto segment_index = static_cast<std::uint32_t>(segments.size());
      for (const auto& e : entries) {
        if (e.partition >= static_cast<std::uint32_t>(partitions))
          corrupt(*seg, e.position,
                  "a record of partition " + std::to_string(e.partition) + ", but the log has " +
                    std::to_string(partitions));
        auto& locs = locations[e.partition];
        if (e.offset != locs.size())
          corrupt(*seg, e.position,
                  "partition " + std::to_string(e.partition) + " offset " +
                    std::to_string(e.offset) + " where offset " + std::to_string(locs.size()) +
                    " belongs");
        locs.push_back({segment_index, e.position});
      }
      recovery.records += entries.size();
      if (last)
        active_entries = std::move(entries);
      segments.push_back(std::move(seg));
    }
  }
  recovery.segments = segments.size();
  active = segments.back().get();
  for (std::int32_t p = 0; p < partitions; ++p)
    next_offset[p] = published_end[p] = static_cast<std::int64_t>(locations[p].size());
}

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

batch_buffer file_log::impl::spare_buffer() {
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
      futex_wake_all(signal);
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

void file_log::append(std::vector<log_record> batch, append_callback done) {
  if (batch.empty()) {
    done(append_result{});
    return;
  }
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
    futex_wait(signal, seen);
  }
  if (number >= m.first_failed_batch.load()) {
    out.positions.clear();
    out.maybe_stored = m.maybe_stored_batch.load() == number;
    std::lock_guard l(m.queue_mu);
    out.failure = m.failed;
  }
  return out;
}

read_result file_log::read(std::int32_t partition, std::int64_t from, std::size_t max) {
  auto& m = *impl_;
  read_result out;
  if (partition < 0 || partition >= m.partitions || from < 0) {
    out.failure = error{errc::invalid_argument,
                        "cannot read partition " + std::to_string(partition) + " from offset " +
                          std::to_string(from) + ": " + describe() + " has partitions 0.." +
                          std::to_string(m.partitions - 1) + " and offsets start at 0"};
    return out;
  }
  struct where {
    const log_segment* segment;
    std::uint32_t position;
  };
  std::vector<where> places;
  {
    std::shared_lock l(m.index_mu);
    const auto& locs = m.locations[partition];
    const auto end = static_cast<std::int64_t>(locs.size());
    if (from >= end || max == 0)
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

offset_result file_log::end_offset(std::int32_t partition) {
  auto& m = *impl_;
  if (partition < 0 || partition >= m.partitions)
    return {-1, error{errc::invalid_argument,
                      describe() + " has no partition " + std::to_string(partition)}};
  std::lock_guard l(m.wait_mu);
  return {m.published_end[partition], std::nullopt};
}

bool file_log::wait_for(std::int32_t partition, std::int64_t offset,
                        std::chrono::milliseconds timeout) {
  auto& m = *impl_;
  if (partition < 0 || partition >= m.partitions)
    return false;
  std::unique_lock l(m.wait_mu);
  m.wait_cv.wait_for(l, timeout, [&] { return m.published_end[partition] > offset || m.closed; });
  return m.published_end[partition] > offset;
}

} // namespace sandboxd::events
