#include "runtime/hollow_table.hpp"

#include "base/crc32c.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace sandboxd::runtime {
namespace {

constexpr char k_magic[8] = {'s', 'b', 'd', 'h', 'o', 'l', '0', '2'};
constexpr std::size_t k_header = 8; // length u32 | checksum u32
// A record's body is far smaller; a larger length is a damaged header.
constexpr std::uint32_t k_max_body = 1u << 16;
// The journal is rewritten when it holds more than this many records and more than
// k_dead_ratio times as many as there are live sandboxes.
constexpr std::uint64_t k_compact_min_records = 65536;
constexpr std::uint64_t k_dead_ratio = 3;

enum class kind : std::uint8_t { put = 1, status = 2, erase = 3 };

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// CRC-32C: catches the torn and zeroed tails a crash leaves.
std::uint32_t checksum(const char* p, std::size_t n) {
  return crc32c(p, n);
}

void put_u(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_str(std::string& out, const std::string& s) {
  put_u(out, s.size(), 4);
  out += s;
}

// Appends one whole record (header and body) to `out`; `write_body` appends the body.
template <class F>
void add_record(std::string& out, F&& write_body) {
  const std::size_t at = out.size();
  out.append(k_header, '\0');
  write_body(out);
  const auto n = static_cast<std::uint32_t>(out.size() - at - k_header);
  const std::uint32_t sum = checksum(out.data() + at + k_header, n);
  for (int i = 0; i < 4; ++i) {
    out[at + static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    out[at + 4 + static_cast<std::size_t>(i)] = static_cast<char>((sum >> (8 * i)) & 0xff);
  }
}

void add_put(std::string& out, const sandbox_info& info) {
  add_record(out, [&](std::string& b) {
    put_u(b, static_cast<std::uint8_t>(kind::put), 1);
    put_str(b, info.id);
    put_str(b, info.template_name);
    put_u(b, static_cast<std::uint8_t>(info.status), 1);
    put_u(b, info.limits.memory_bytes, 8);
    put_u(b, info.limits.cpu_millis, 4);
    put_u(b, info.limits.pids, 4);
    put_u(b, info.limits.max_output_bytes, 8);
    put_u(b, info.limits.max_file_bytes, 8);
    put_u(b, info.limits.disk_bytes, 8);
    put_u(b, info.limits.max_dir_entries, 4);
  });
}

// Reads a record body; every getter returns false past the end.
struct reader {
  const char* p;
  std::size_t n;

  bool u(std::uint64_t& v, int bytes) {
    if (n < static_cast<std::size_t>(bytes))
      return false;
    v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    p += bytes;
    n -= static_cast<std::size_t>(bytes);
    return true;
  }
  bool str(std::string& s) {
    std::uint64_t len = 0;
    if (!u(len, 4) || n < len)
      return false;
    s.assign(p, len);
    p += len;
    n -= len;
    return true;
  }
  bool status(sandbox_status& s) {
    std::uint64_t v = 0;
    if (!u(v, 1) || v > static_cast<std::uint64_t>(sandbox_status::stopped))
      return false;
    s = static_cast<sandbox_status>(v);
    return true;
  }
};

} // namespace

hollow_table::hollow_table(std::string path, bool sync) : path_(std::move(path)), sync_(sync) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    fail("open " + path_);
  try {
    replay();
    compact_if_worthwhile();
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

hollow_table::~hollow_table() {
  if (fd_ >= 0)
    ::close(fd_);
}

void hollow_table::replay() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    fail("stat " + path_);
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t r = ::pread(fd_, data.data() + got, data.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      fail("read " + path_);
    if (r == 0)
      break;
    got += static_cast<std::size_t>(r);
  }
  data.resize(got);
  if (data.size() < sizeof k_magic) {
    // New, or its creation was cut short: start it afresh.
    if (::ftruncate(fd_, 0) != 0)
      fail("truncate " + path_);
    size_ = 0;
    append(std::string(k_magic, sizeof k_magic));
    records_ = 0;
    return;
  }
  if (std::memcmp(data.data(), k_magic, sizeof k_magic) != 0)
    throw std::runtime_error(
      path_ + " is not a hollow driver journal of this version (magic sbdhol02); move it away");
  std::size_t at = sizeof k_magic;
  for (;;) {
    reader h{data.data() + at, data.size() - at};
    std::uint64_t len = 0, sum = 0;
    if (!h.u(len, 4) || !h.u(sum, 4) || len == 0 || len > k_max_body || h.n < len ||
        checksum(h.p, len) != sum)
      break;
    reader b{h.p, len};
    std::uint64_t k = 0;
    std::string id;
    if (!b.u(k, 1) || !b.str(id))
      break;
    if (k == static_cast<std::uint8_t>(kind::put)) {
      sandbox_info info;
      info.id = id;
      std::uint64_t mem = 0, cpu = 0, pids = 0, out = 0, file = 0;
      if (!b.str(info.template_name) || !b.status(info.status) || !b.u(mem, 8) || !b.u(cpu, 4) ||
          !b.u(pids, 4) || !b.u(out, 8) || !b.u(file, 8))
        break;
      info.limits.memory_bytes = mem;
      info.limits.cpu_millis = static_cast<std::uint32_t>(cpu);
      info.limits.pids = static_cast<std::uint32_t>(pids);
      info.limits.max_output_bytes = out;
      info.limits.max_file_bytes = file;
      // Added later: absent in older journals, which keep the defaults.
      std::uint64_t disk = 0, entries = info.limits.max_dir_entries;
      if (b.u(disk, 8) && b.u(entries, 4)) {
        info.limits.disk_bytes = disk;
        info.limits.max_dir_entries = static_cast<std::uint32_t>(entries);
      }
      table_[id] = std::move(info);
    } else if (k == static_cast<std::uint8_t>(kind::status)) {
      sandbox_status s{};
      if (!b.status(s))
        break;
      if (auto it = table_.find(id); it != table_.end())
        it->second.status = s;
    } else if (k == static_cast<std::uint8_t>(kind::erase)) {
      table_.erase(id);
    } else {
      break;
    }
    at += k_header + len;
    ++records_;
  }
  size_ = at;
  if (at < data.size() && ::ftruncate(fd_, static_cast<off_t>(at)) != 0)
    fail("truncate the damaged tail of " + path_);
}

void hollow_table::append(const std::string& record) {
  const ssize_t w = ::write(fd_, record.data(), record.size());
  int e = 0;
  if (w < 0)
    e = errno;
  else if (w != static_cast<ssize_t>(record.size()))
    e = ENOSPC; // a short write to a regular file: the disk (or a quota) is full
  else if (sync_ && ::fdatasync(fd_) != 0)
    e = errno;
  if (e != 0) {
    // Cut the record off, so that the file and the table stay equal and later records
    // stay readable; the write's error is the one reported.
    [[maybe_unused]] const int cut = ::ftruncate(fd_, static_cast<off_t>(size_));
    errno = e;
    fail("append to " + path_);
  }
  size_ += record.size();
  ++records_;
}

const sandbox_info* hollow_table::find(const std::string& id) const {
  auto it = table_.find(id);
  return it == table_.end() ? nullptr : &it->second;
}

void hollow_table::insert(const sandbox_info& info) {
  std::string r;
  add_put(r, info);
  append(r);
  table_.emplace(info.id, info);
  compact_if_worthwhile();
}

void hollow_table::set_status(const std::string& id, sandbox_status status) {
  std::string r;
  add_record(r, [&](std::string& b) {
    put_u(b, static_cast<std::uint8_t>(kind::status), 1);
    put_str(b, id);
    put_u(b, static_cast<std::uint8_t>(status), 1);
  });
  append(r);
  table_.at(id).status = status;
  compact_if_worthwhile();
}

void hollow_table::erase(const std::string& id) {
  std::string r;
  add_record(r, [&](std::string& b) {
    put_u(b, static_cast<std::uint8_t>(kind::erase), 1);
    put_str(b, id);
  });
  append(r);
  table_.erase(id);
  compact_if_worthwhile();
}

std::vector<sandbox_info> hollow_table::all() const {
  std::vector<sandbox_info> out;
  out.reserve(table_.size());
  for (const auto& [id, info] : table_)
    out.push_back(info);
  return out;
}

void hollow_table::compact_if_worthwhile() {
  if (records_ <= k_compact_min_records || records_ <= k_dead_ratio * table_.size())
    return;
  std::string data(k_magic, sizeof k_magic);
  for (const auto& [id, info] : table_)
    add_put(data, info);
  const std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("open " + tmp);
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      const int e = w < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      errno = e;
      fail("write " + tmp);
    }
    done += static_cast<std::size_t>(w);
  }
  if ((sync_ && ::fdatasync(fd) != 0) || ::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = e;
    fail("replace " + path_);
  }
  if (sync_) {
    const auto slash = path_.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash);
    if (int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
      ::fsync(d);
      ::close(d);
    }
  }
  // The renamed file is opened for appending (O_APPEND), so keep its descriptor.
  ::close(fd_);
  fd_ = fd;
  size_ = data.size();
  records_ = table_.size();
}

} // namespace sandboxd::runtime
