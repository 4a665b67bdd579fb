#include "events/file_log_segment.hpp"

#include "events/event_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace sandboxd::events {

namespace fmt = file_log_format;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw log_fault("file log: " + what + " " + path + ": " + std::strerror(err));
}

void write_all(int fd, const char* p, std::size_t n, off_t at, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, at);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot write", path, errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    at += w;
  }
}

} // namespace

void sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail("cannot open directory", dir, errno);
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot fsync directory", dir, err);
  }
  ::close(fd);
}

log_segment::log_segment(std::string dir, std::uint64_t number)
    : dir_(std::move(dir)), path_(dir_ + "/" + fmt::segment_file_name(number)), number_(number) {}

log_segment::~log_segment() {
  if (data_ != nullptr)
    ::munmap(data_, capacity_);
  if (fd_ >= 0)
    ::close(fd_);
}

std::unique_ptr<log_segment> log_segment::create(const std::string& dir, std::uint64_t number,
                                                 std::uint64_t capacity) {
  std::unique_ptr<log_segment> s(new log_segment(dir, number));
  s->fd_ = ::open(s->path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (s->fd_ < 0)
    fail("cannot create segment", s->path_, errno);
  char header[fmt::k_segment_header_size];
  fmt::make_segment_header(header, number);
  write_all(s->fd_, header, sizeof header, 0, s->path_);
  if (::fdatasync(s->fd_) != 0)
    fail("cannot fdatasync", s->path_, errno);
  sync_directory(dir);
  s->size_ = sizeof header;
  s->file_end_ = sizeof header;
  s->map(std::max<std::uint64_t>(capacity, s->size()));
  return s;
}

std::unique_ptr<log_segment> log_segment::open(const std::string& dir, std::uint64_t number,
                                               bool writable, std::uint64_t capacity) {
  std::unique_ptr<log_segment> s(new log_segment(dir, number));
  s->fd_ = ::open(s->path_.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (s->fd_ < 0)
    fail("cannot open segment", s->path_, errno);
  struct stat st {};
  if (::fstat(s->fd_, &st) != 0)
    fail("cannot stat segment", s->path_, errno);
  s->size_ = static_cast<std::uint64_t>(st.st_size);
  s->file_end_ = s->size();
  if (s->size() > fmt::k_max_segment_bytes)
    throw log_fault("file log: segment " + s->path_ + " is " + std::to_string(s->size()) +
                    " bytes, more than any segment this log writes; it is not a segment of "
                    "this log");
  s->map(std::max<std::uint64_t>({capacity, s->size(), 1}));
  if (!writable)
    s->seal();
  return s;
}

void log_segment::map(std::uint64_t capacity) {
  void* p = ::mmap(nullptr, capacity, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED)
    fail("cannot map segment", path_, errno);
  data_ = static_cast<char*>(p);
  capacity_ = capacity;
}

void log_segment::remap(std::uint64_t capacity) {
  if (capacity <= capacity_)
    return;
  ::munmap(data_, capacity_);
  data_ = nullptr;
  map(capacity);
}

// Zeros are written ahead of the batches in steps of this many bytes. Appending a batch at
// the end of the file would make each fdatasync also commit the file's new size and
// blocks to the file system's journal; overwriting zeros that an earlier sync made durable
// is a data-only sync (about 1.6 times as many syncs per second on ext4 here). One sync in
// every 4 MiB of batches carries the metadata of the next step.
constexpr std::uint64_t k_zero_step = std::uint64_t{4} << 20;

void log_segment::zero_ahead(std::uint64_t end) {
  static const std::vector<char> zeros(std::size_t{1} << 16, '\0');
  while (file_end_ < end) {
    iovec iov[64];
    int n = 0;
    std::uint64_t left = end - file_end_;
    for (; n < 64 && left > 0; ++n) {
      const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
      iov[n] = {const_cast<char*>(zeros.data()), len};
      left -= len;
    }
    ssize_t w = ::pwritev(fd_, iov, n, static_cast<off_t>(file_end_));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      fail("cannot write", path_, w < 0 ? errno : ENOSPC);
    file_end_ += static_cast<std::uint64_t>(w);
  }
}

void log_segment::write(const char* header, std::size_t header_size, std::string_view body) {
  const std::uint64_t end = size() + header_size + body.size();
  if (end > file_end_) {
    // Zero the next step (within the segment's room; a batch may go past it), so that the
    // batches written over it have their blocks already.
    zero_ahead(std::max(end, std::min(file_end_ + k_zero_step, capacity_)));
  }
  iovec iov[2] = {{const_cast<char*>(header), header_size},
                  {const_cast<char*>(body.data()), body.size()}};
  std::size_t total = header_size + body.size();
  ssize_t w = ::pwritev(fd_, iov, 2, static_cast<off_t>(size()));
  if (w < 0 && errno != EINTR)
    fail("cannot write", path_, errno);
  std::size_t done = w < 0 ? 0 : static_cast<std::size_t>(w);
  // A short write (a signal, a full disk) continues where it stopped.
  while (done < total) {
    const char* p;
    std::size_t n;
    if (done < header_size) {
      p = header + done;
      n = header_size - done;
    } else {
      p = body.data() + (done - header_size);
      n = total - done;
    }
    write_all(fd_, p, n, static_cast<off_t>(size() + done), path_);
    done += n;
  }
  written_ = total;
  file_end_ = std::max(file_end_, size() + total);
}

void log_segment::sync_written() {
  if (::fdatasync(fd_) != 0)
    fail("cannot fdatasync", path_, errno);
  size_.store(size() + written_, std::memory_order_release);
  written_ = 0;
}

void log_segment::seal() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

void log_segment::truncate(std::uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    fail("cannot truncate", path_, errno);
  if (::fsync(fd_) != 0)
    fail("cannot fsync", path_, errno);
  size_ = size;
  file_end_ = size;
}

void log_segment::rewrite_header() {
  char header[fmt::k_segment_header_size];
  fmt::make_segment_header(header, number_);
  if (::ftruncate(fd_, 0) != 0)
    fail("cannot truncate", path_, errno);
  write_all(fd_, header, sizeof header, 0, path_);
  if (::fsync(fd_) != 0)
    fail("cannot fsync", path_, errno);
  size_ = sizeof header;
  file_end_ = sizeof header;
}

void log_segment::write_index(const std::vector<fmt::index_entry>& entries) const {
  const std::string bytes = fmt::encode_index(entries);
  const std::string path = dir_ + "/" + fmt::index_file_name(number_);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot create index", tmp, errno);
  try {
    write_all(fd, bytes.data(), bytes.size(), 0, tmp);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    fail("cannot rename index", tmp, errno);
}

bool log_segment::read_index(std::vector<fmt::index_entry>& entries) const {
  const std::string path = dir_ + "/" + fmt::index_file_name(number_);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      ::close(fd);
      if (r < 0)
        return false;
      break;
    }
    bytes.append(buf, static_cast<std::size_t>(r));
  }
  return fmt::decode_index(bytes, entries);
}

void log_segment::remove_index() const {
  const std::string path = dir_ + "/" + fmt::index_file_name(number_);
  ::unlink(path.c_str());
}

namespace {

// Parses the records of a batch body whose batch CRC matched. False (with `problem`) when
// the records do not fill the body exactly.
bool parse_records(const char* body, std::uint32_t length, std::uint32_t count,
                   std::uint64_t body_position, std::vector<fmt::index_entry>& entries,
                   std::string& problem) {
  std::uint32_t at = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    fmt::record_view r;
    if (!fmt::read_record(body + at, length - at, r)) {
      problem = "record " + std::to_string(i) + " of the batch does not check out";
      return false;
    }
    entries.push_back({r.partition, static_cast<std::uint32_t>(body_position + at), r.offset});
    at += static_cast<std::uint32_t>(r.size);
  }
  if (at != length) {
    problem = "the batch's records do not fill its length";
    return false;
  }
  return true;
}

// Names the first record of the batch at `at` that does not check out, for the message.
std::string first_damaged_record(const char* data, std::uint64_t at, std::uint64_t end) {
  const std::uint64_t body_end =
    std::min<std::uint64_t>(end, at + fmt::k_batch_header_size + fmt::get_u32(data + at + 8));
  std::uint64_t p = at + fmt::k_batch_header_size;
  while (p < body_end) {
    fmt::record_view r;
    if (!fmt::read_record(data + p, body_end - p, r)) {
      std::string out = "; the first damaged record is at byte " + std::to_string(p);
      if (body_end - p >= fmt::k_record_header_size)
        out += " (its header says partition " + std::to_string(fmt::get_u32(data + p + 12)) +
               " offset " + std::to_string(fmt::get_u64(data + p + 16)) + ")";
      return out;
    }
    p += r.size;
  }
  return "";
}

bool all_zero(const char* data, std::uint64_t from, std::uint64_t end) {
  for (; from < end; ++from)
    if (data[from] != 0)
      return false;
  return true;
}

// Where the bytes of the invalid batch at `at` end, by the lengths the format declares:
// its header's length when the header is sound and the batch fits the file (`declared`);
// otherwise the end of the run of whole, CRC-valid records from its body's start, walked
// by each record's own declared length. Never a search through record values.
std::uint64_t bad_batch_end(const char* data, std::uint64_t at, std::uint64_t file_size,
                            bool& declared) {
  const std::uint64_t body = at + fmt::k_batch_header_size;
  std::uint64_t limit = file_size;
  declared = false;
  if (body <= file_size && fmt::get_u32(data + at) == fmt::k_batch_magic) {
    const std::uint32_t length = fmt::get_u32(data + at + 8);
    const std::uint32_t count = fmt::get_u32(data + at + 12);
    const bool sound = count > 0 && std::uint64_t{count} * fmt::k_record_header_size <= length;
    if (sound && body + length <= file_size) {
      declared = true;
      return body + length;
    }
    if (sound)
      limit = std::min(limit, body + length);
  }
  std::uint64_t p = std::min(body, file_size);
  fmt::record_view r;
  while (p < limit && fmt::read_record(data + p, limit - p, r))
    p += r.size;
  return p;
}

} // namespace

segment_scan scan_segment(const log_segment& segment, std::uint64_t file_size) {
  segment_scan scan;
  const char* data = segment.data();
  std::uint64_t at = fmt::k_segment_header_size;
  scan.valid_end = at;
  while (at < file_size) {
    std::uint32_t length = 0, count = 0;
    auto check = fmt::check_batch(data + at, file_size - at, length, count);
    std::string problem;
    if (check == fmt::batch_check::ok) {
      std::vector<fmt::index_entry> batch_entries;
      if (parse_records(data + at + fmt::k_batch_header_size, length, count,
                        at + fmt::k_batch_header_size, batch_entries, problem)) {
        scan.entries.insert(scan.entries.end(), batch_entries.begin(), batch_entries.end());
        at += fmt::k_batch_header_size + length;
        scan.valid_end = at;
        continue;
      }
    } else {
      problem = std::string(fmt::to_string(check));
      if (check == fmt::batch_check::bad_crc)
        problem += first_damaged_record(data, at, file_size);
    }
    scan.bad_position = at;
    scan.problem = problem;
    // Only the last write can be torn (the writer issues a write only after the previous
    // one's fdatasync returned), and after it the writer wrote nothing but zeros. So the
    // bad batch is a torn tail when nothing but zeros follows where it ends; when a whole
    // valid batch follows, or anything at all follows a batch whose end its header
    // declares, a later write happened: this batch had been synced, and is damage.
    bool declared = false;
    const std::uint64_t end = bad_batch_end(data, at, file_size, declared);
    std::uint32_t next_length = 0, next_count = 0;
    if (all_zero(data, end, file_size)) {
      scan.result = segment_scan::outcome::torn_tail;
    } else if (declared) {
      scan.result = segment_scan::outcome::corrupt;
      scan.problem +=
        "; bytes follow its end at byte " + std::to_string(end) + ", so it is not the last write";
    } else if (fmt::check_batch(data + end, file_size - end, next_length, next_count) ==
               fmt::batch_check::ok) {
      scan.result = segment_scan::outcome::corrupt;
      scan.problem += "; its records end at byte " + std::to_string(end) +
                      ", where a valid batch follows, so it is not the last write";
    } else {
      scan.result = segment_scan::outcome::torn_tail;
    }
    return scan;
  }
  return scan;
}

std::vector<std::uint64_t> list_segments(const std::string& dir) {
  std::vector<std::uint64_t> numbers;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::uint64_t n;
    if (fmt::parse_segment_file_name(entry.path().filename().string(), n))
      numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (numbers[i] != i)
      throw log_fault("file log: segment " + dir + "/" + fmt::segment_file_name(i) +
                      " is missing (the directory holds " + fmt::segment_file_name(numbers[i]) +
                      " instead); records before it are lost — restore it from a backup");
  }
  return numbers;
}

std::string misplaced_entry(const fmt::index_entry& e, std::int32_t partitions,
                            std::size_t records) {
  if (e.partition >= static_cast<std::uint32_t>(partitions))
    return "a record of partition " + std::to_string(e.partition) + ", but the log has " +
           std::to_string(partitions);
  if (e.offset != records)
    return "partition " + std::to_string(e.partition) + " offset " + std::to_string(e.offset) +
           " where offset " + std::to_string(records) + " belongs";
  return {};
}

} // namespace sandboxd::events
