#include "events/file_log.hpp"

#include "events/file_log_format.hpp"
#include "events/file_log_segment.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

namespace sandboxd::events {

namespace fmt = file_log_format;

namespace {

constexpr std::size_t k_max_key_bytes = std::size_t{64} << 10;
constexpr std::size_t k_max_value_bytes = std::size_t{64} << 20;
constexpr std::uint64_t k_min_segment_bytes = 4096;
constexpr const char* k_meta_first_line = "sandboxd file log 1";

// Where a record lies: an index into the log's segments and a byte position in it.
struct location {
  std::uint32_t segment;
  std::uint32_t position;
};

// One append waiting for the writer: its records are already encoded in the pending body.
struct pending_append {
  append_callback done;
  std::vector<record_position> positions;
  std::vector<std::uint32_t> body_positions; // of each record, within the pending body
};

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
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

} // namespace

struct file_log::impl {
  file_log_options options;
  std::int32_t partitions = 0;
  int lock_fd = -1;
  file_log_recovery recovery;

  // Appends not yet taken by the writer. Offsets are assigned here, in queue order, which
  // is also the order the writer stores them in.
  std::mutex queue_mu;
  std::condition_variable work_cv;  // the writer waits for appends
  std::condition_variable space_cv; // appenders wait for max_pending_bytes
  std::string pending_body;
  std::uint32_t pending_count = 0;
  std::vector<pending_append> pending;
  std::vector<std::int64_t> next_offset; // per partition, queued records included
  bool closing = false;
  std::optional<error> failed; // set once a write or sync failed

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

  // Completions run on their own thread, in commit order, so the writer starts the next
  // write as soon as a sync returns.
  struct finished_batch {
    std::vector<pending_append> appends;
    std::optional<error> failure;
  };
  std::mutex done_mu;
  std::condition_variable done_cv;
  std::deque<finished_batch> finished;
  bool writer_done = false;
  std::thread completer;
  std::thread::id completer_id;

  explicit impl(const file_log_options& o);
  ~impl();
  void lock_directory();
  void read_or_create_meta(bool has_segments);
  void open_segments();
  void run_writer();
  void run_completer();
  void commit(std::string& body, std::uint32_t count, std::vector<pending_append>& appends);
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
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec)
    throw log_fault("file log: cannot create " + options.dir + ": " + ec.message());
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
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(lock_fd);
    lock_fd = -1;
    if (err == EWOULDBLOCK) {
      std::string holder = read_small_file(path);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
        holder.pop_back();
      throw log_fault("file log " + options.dir + " is in use by another process (pid " +
                      (holder.empty() ? std::string("unknown") : holder) + " holds " + path +
                      "); stop it first, or give this one another data "
                      "directory");
    }
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
      bool indexed = !last && seg->read_index(entries);
      if (!indexed) {
        ++recovery.segments_scanned;
        if (!fmt::check_segment_header(seg->data(), file_size, seg->number())) {
          if (!last || file_size > fmt::k_segment_header_size)
            corrupt(*seg, 0, "no valid segment header");
          // A crash while the last segment was being created: it holds no record.
          seg->rewrite_header();
        } else {
          auto scan = scan_segment(*seg, file_size);
          if (scan.result == segment_scan::outcome::corrupt ||
              (scan.result == segment_scan::outcome::torn_tail && !last))
            corrupt(*seg, scan.bad_position, scan.problem);
          if (scan.result == segment_scan::outcome::torn_tail) {
            seg->truncate(scan.valid_end);
            recovery.truncated_bytes = file_size - scan.valid_end;
            recovery.truncated_segment = seg->path();
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
  std::string body;
  std::vector<pending_append> appends;
  // Group commit. Appenders that wait for their acknowledgement before appending again
  // split into two halves that take turns: one half's sync is in flight while the other
  // half queues. `expected` is how many appends the last commit carried plus how many
  // queued during it; when fewer are queued, the writer gives the appenders the last
  // commit released a moment (at most half a sync, and never more than 1 ms) to come
  // back, so that one sync serves them all.
  std::size_t expected = 0;
  std::chrono::nanoseconds last_sync{0};
  for (;;) {
    std::uint32_t count;
    {
      std::unique_lock l(queue_mu);
      work_cv.wait(l, [&] { return !pending.empty() || closing; });
      if (pending.empty())
        return;
      if (pending.size() < expected && last_sync.count() > 0) {
        auto gather =
          std::min<std::chrono::nanoseconds>(last_sync / 2, std::chrono::milliseconds(1));
        work_cv.wait_for(l, gather, [&] { return pending.size() >= expected || closing; });
      }
      body.clear();
      appends.clear();
      std::swap(body, pending_body);
      std::swap(appends, pending);
      count = pending_count;
      pending_count = 0;
    }
    space_cv.notify_all();
    const std::size_t carried = appends.size();
    const auto started = std::chrono::steady_clock::now();
    commit(body, count, appends);
    last_sync = std::chrono::steady_clock::now() - started;
    std::lock_guard l(queue_mu);
    expected = carried + pending.size();
  }
}

void file_log::impl::roll(std::uint64_t batch_size) {
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

void file_log::impl::commit(std::string& body, std::uint32_t count,
                            std::vector<pending_append>& appends) {
  std::optional<error> failure;
  {
    std::lock_guard l(queue_mu);
    failure = failed;
  }
  if (!failure) {
    try {
      char header[fmt::k_batch_header_size];
      fmt::make_batch_header(header, body, count);
      const std::uint64_t batch_size = sizeof header + body.size();
      if (active->size() + batch_size > active->capacity()) {
        if (active->size() > fmt::k_segment_header_size)
          roll(batch_size);
        else
          active->remap(active->size() + batch_size); // no record points into it yet
      }
      const std::uint64_t base = active->size() + sizeof header;
      active->append(header, sizeof header, body, true);
      std::uint32_t segment_index;
      {
        std::unique_lock l(index_mu);
        segment_index = static_cast<std::uint32_t>(segments.size() - 1);
        for (const auto& a : appends)
          for (std::size_t i = 0; i < a.positions.size(); ++i) {
            const auto position = static_cast<std::uint32_t>(base + a.body_positions[i]);
            locations[a.positions[i].partition].push_back({segment_index, position});
            active_entries.push_back({static_cast<std::uint32_t>(a.positions[i].partition),
                                      position, static_cast<std::uint64_t>(a.positions[i].offset)});
          }
      }
      {
        std::lock_guard l(wait_mu);
        for (std::int32_t p = 0; p < partitions; ++p)
          published_end[p] = static_cast<std::int64_t>(locations[p].size());
      }
      wait_cv.notify_all();
    } catch (const log_fault& f) {
      failure = error{errc::unavailable, std::string(f.what()) +
                                           "; the file log takes no more appends — "
                                           "reopen it (recovery keeps every synced record)"};
      std::lock_guard l(queue_mu);
      failed = failure;
    }
  }
  {
    std::lock_guard l(done_mu);
    finished.push_back({std::move(appends), std::move(failure)});
  }
  appends.clear();
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
    for (auto& a : b.appends) {
      append_result r;
      if (b.failure)
        r.failure = b.failure;
      else
        r.positions = std::move(a.positions);
      a.done(std::move(r));
    }
  }
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
  return "file log " + impl_->options.dir;
}

void file_log::append(std::vector<log_record> batch, append_callback done) {
  auto& m = *impl_;
  std::size_t bytes = 0;
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
    if (!problem.empty()) {
      done(append_result{
        {},
        error{errc::invalid_argument, "record " + std::to_string(i) + " of the batch " + problem}});
      return;
    }
    bytes += fmt::record_size(r.key.size(), r.value.size());
  }
  if (batch.empty()) {
    done(append_result{});
    return;
  }
  std::unique_lock l(m.queue_mu);
  // A completion that appends must not wait for room: completions would stall behind it.
  if (std::this_thread::get_id() != m.completer_id)
    m.space_cv.wait(l, [&] {
      return m.pending_body.size() < m.options.max_pending_bytes || m.closing || m.failed;
    });
  std::optional<error> refusal = m.failed;
  if (m.closing)
    refusal = error{errc::unavailable, describe() + " is closed; it takes no more appends"};
  if (refusal) {
    l.unlock();
    done(append_result{{}, refusal});
    return;
  }
  pending_append a;
  a.done = std::move(done);
  a.positions.reserve(batch.size());
  a.body_positions.reserve(batch.size());
  m.pending_body.reserve(m.pending_body.size() + bytes);
  for (const auto& r : batch) {
    const std::int32_t p = events::partition_for(r.key, m.partitions);
    const std::int64_t offset = m.next_offset[p]++;
    a.positions.push_back({p, offset});
    a.body_positions.push_back(static_cast<std::uint32_t>(m.pending_body.size()));
    fmt::append_record(m.pending_body, static_cast<std::uint32_t>(p),
                       static_cast<std::uint64_t>(offset), r.key, r.value);
  }
  m.pending_count += static_cast<std::uint32_t>(batch.size());
  m.pending.push_back(std::move(a));
  l.unlock();
  m.work_cv.notify_one();
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
