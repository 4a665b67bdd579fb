#include "actors/state_snapshot.hpp"

#include "base/crc32c.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace sandboxd::actors {
namespace {

constexpr char k_magic[8] = {'s', 'b', 'd', 's', 'n', 'a', 'p', '1'};
// Header: magic (8), partition (8), next_offset (8), count (8), body CRC-32C (8).
constexpr std::size_t k_header = 40;

std::string path_of(const std::string& dir, std::int32_t partition) {
  return dir + "/partition-" + std::to_string(partition) + ".snapshot";
}

std::uint64_t get_u64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

std::string read_all(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t at = 0;
    while (at < out.size()) {
      ssize_t r = ::read(fd, out.data() + at, out.size() - at);
      if (r <= 0)
        break;
      at += static_cast<std::size_t>(r);
    }
    out.resize(at);
  }
  ::close(fd);
  return out;
}

partition_view empty_view(std::int32_t partition) {
  partition_view v;
  v.partition = partition;
  return v;
}

} // namespace

partition_view load_partition_snapshot(const std::string& dir, std::int32_t partition) {
  partition_view view;
  view.partition = partition;
  const std::string bytes = read_all(path_of(dir, partition));
  if (bytes.size() < k_header || std::memcmp(bytes.data(), k_magic, 8) != 0 ||
      get_u64(bytes.data() + 8) != static_cast<std::uint64_t>(partition))
    return view;
  const auto next_offset = static_cast<std::int64_t>(get_u64(bytes.data() + 16));
  const auto count = get_u64(bytes.data() + 24);
  const auto crc = get_u64(bytes.data() + 32);
  if (crc32c(bytes.data() + k_header, bytes.size() - k_header) != crc)
    return view;
  std::string_view body(bytes.data() + k_header, bytes.size() - k_header);
  view.sandboxes.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (body.size() < 8)
      return empty_view(partition);
    const auto n = get_u64(body.data());
    if (n > body.size() - 8)
      return empty_view(partition);
    auto s = decode_state(body.substr(8, n));
    if (!s)
      return empty_view(partition);
    body.remove_prefix(8 + n);
    auto id = s->state.sandbox_id;
    view.sandboxes.emplace(std::move(id), std::move(*s));
  }
  if (!body.empty())
    return empty_view(partition);
  view.next_offset = next_offset;
  view.from_snapshot = count;
  return view;
}

void apply_event(partition_view& view, const events::event& e, std::int64_t offset) {
  auto [it, fresh] = view.sandboxes.try_emplace(e.sandbox_id);
  auto& r = it->second;
  if (fresh)
    r.state = initial_state(e.sandbox_id);
  const auto before = r.state.sequence;
  r.state = evolve(std::move(r.state), e);
  if (r.state.sequence != before)
    r.offsets.push_back(offset);
}

void replay_tail(events::event_log& log, partition_view& view) {
  constexpr std::size_t k_chunk = 4096;
  for (;;) {
    auto rr = log.read(view.partition, view.next_offset, k_chunk);
    if (!rr.ok())
      throw std::runtime_error("recovery cannot read partition " + std::to_string(view.partition) +
                               " of " + log.describe() + ": " + rr.failure->message);
    if (rr.records.empty())
      return;
    for (const auto& rec : rr.records) {
      if (rec.key == events::template_stream_key) { // the template registry's, not a sandbox
        view.next_offset = rec.offset + 1;
        continue;
      }
      auto d = events::decode(rec.value);
      if (!d.ok())
        throw std::runtime_error("record at partition " + std::to_string(rec.partition) +
                                 " offset " + std::to_string(rec.offset) + " of " + log.describe() +
                                 " is not an event (" + d.failure().message +
                                 "); the log is damaged: restore it from a backup");
      apply_event(view, d.get(), rec.offset);
      view.next_offset = rec.offset + 1;
      ++view.events_replayed;
    }
  }
}

partition_view recover_partition(events::event_log& log, const std::string& dir,
                                 std::int32_t partition) {
  partition_view view = load_partition_snapshot(dir, partition);
  replay_tail(log, view);
  return view;
}

void write_partition_snapshot(const std::string& dir, const partition_view& view) {
  std::filesystem::create_directories(dir);
  std::string body;
  body.reserve(view.sandboxes.size() * 256);
  std::string one;
  for (const auto& [id, r] : view.sandboxes) {
    one.clear();
    encode_state(r, one);
    put_u64(body, one.size());
    body += one;
  }
  std::string out;
  out.reserve(k_header + body.size());
  out.append(k_magic, 8);
  put_u64(out, static_cast<std::uint64_t>(view.partition));
  put_u64(out, static_cast<std::uint64_t>(view.next_offset));
  put_u64(out, view.sandboxes.size());
  put_u64(out, crc32c(body.data(), body.size()));
  out += body;
  const std::string path = path_of(dir, view.partition);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot create snapshot " + tmp + ": " + std::strerror(errno));
  std::size_t at = 0;
  bool ok = true;
  while (ok && at < out.size()) {
    ssize_t w = ::write(fd, out.data() + at, out.size() - at);
    ok = w > 0;
    if (ok)
      at += static_cast<std::size_t>(w);
  }
  ok = ok && ::fdatasync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write snapshot " + path + ": " +
                             std::strerror(ok ? errno : err) + "; check the data directory");
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::uint64_t take_snapshots(events::event_log& log, const std::string& dir) {
  std::uint64_t replayed = 0;
  for (std::int32_t p = 0; p < log.partitions(); ++p) {
    auto view = recover_partition(log, dir, p);
    replayed += view.events_replayed;
    if (view.events_replayed > 0)
      write_partition_snapshot(dir, view);
  }
  return replayed;
}

} // namespace sandboxd::actors
