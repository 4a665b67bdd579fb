#include "events/file_log_format.hpp"

#include "base/crc32c.hpp"

#include <charconv>
#include <cstdio>

namespace sandboxd::events::file_log_format {

void append_record(std::string& out, std::uint32_t partition, std::uint64_t offset,
                   std::string_view key, std::string_view value) {
  const std::size_t start = out.size();
  out.resize(start + k_record_header_size);
  out.append(key);
  out.append(value);
  char* h = out.data() + start;
  put_u32(h + 4, static_cast<std::uint32_t>(key.size()));
  put_u32(h + 8, static_cast<std::uint32_t>(value.size()));
  put_u32(h + 12, partition);
  put_u64(h + 16, offset);
  put_u32(h, crc32c(h + 4, k_record_header_size - 4 + key.size() + value.size()));
}

bool read_record(const char* p, std::size_t available, record_view& out) {
  if (available < k_record_header_size)
    return false;
  const std::uint64_t key_size = get_u32(p + 4);
  const std::uint64_t value_size = get_u32(p + 8);
  const std::uint64_t size = k_record_header_size + key_size + value_size;
  if (size > available)
    return false;
  if (crc32c(p + 4, size - 4) != get_u32(p))
    return false;
  out.partition = get_u32(p + 12);
  out.offset = get_u64(p + 16);
  out.key = std::string_view(p + k_record_header_size, key_size);
  out.value = std::string_view(p + k_record_header_size + key_size, value_size);
  out.size = size;
  return true;
}

void make_batch_header(char* header, std::string_view body, std::uint32_t count) {
  put_u32(header, k_batch_magic);
  put_u32(header + 8, static_cast<std::uint32_t>(body.size()));
  put_u32(header + 12, count);
  std::uint32_t crc = crc32c(header + 8, 8);
  put_u32(header + 4, crc32c_extend(crc, body.data(), body.size()));
}

batch_check check_batch(const char* p, std::size_t available, std::uint32_t& body_length,
                        std::uint32_t& count) {
  if (available < k_batch_header_size)
    return batch_check::truncated;
  if (get_u32(p) != k_batch_magic)
    return batch_check::bad_magic;
  const std::uint32_t length = get_u32(p + 8);
  const std::uint32_t n = get_u32(p + 12);
  // Every record takes at least a header, so a count that does not fit is not a batch.
  if (std::uint64_t{n} * k_record_header_size > length || n == 0)
    return batch_check::bad_length;
  if (k_batch_header_size + std::uint64_t{length} > available)
    return batch_check::truncated;
  std::uint32_t crc = crc32c(p + 8, 8);
  if (crc32c_extend(crc, p + k_batch_header_size, length) != get_u32(p + 4))
    return batch_check::bad_crc;
  body_length = length;
  count = n;
  return batch_check::ok;
}

std::string_view to_string(batch_check c) {
  switch (c) {
  case batch_check::ok:
    return "ok";
  case batch_check::truncated:
    return "the batch extends past the end of the file";
  case batch_check::bad_magic:
    return "no batch header where one must be";
  case batch_check::bad_length:
    return "the batch header's length and count disagree";
  case batch_check::bad_crc:
    return "the batch's CRC-32C does not match its bytes";
  }
  return "?";
}

void make_segment_header(char* header, std::uint64_t segment_number) {
  std::memcpy(header, k_segment_magic, 8);
  put_u64(header + 8, segment_number);
}

bool check_segment_header(const char* p, std::size_t available, std::uint64_t segment_number) {
  return available >= k_segment_header_size && std::memcmp(p, k_segment_magic, 8) == 0 &&
         get_u64(p + 8) == segment_number;
}

namespace {

std::string numbered(std::uint64_t n, const char* suffix) {
  char name[40];
  std::snprintf(name, sizeof name, "%020llu%s", static_cast<unsigned long long>(n), suffix);
  return name;
}

} // namespace

std::string segment_file_name(std::uint64_t segment_number) {
  return numbered(segment_number, ".log");
}

std::string index_file_name(std::uint64_t segment_number) {
  return numbered(segment_number, ".idx");
}

bool parse_segment_file_name(std::string_view name, std::uint64_t& segment_number) {
  if (name.size() != 24 || name.substr(20) != ".log")
    return false;
  auto [end, ec] = std::from_chars(name.data(), name.data() + 20, segment_number);
  return ec == std::errc() && end == name.data() + 20;
}

std::string encode_index(const std::vector<index_entry>& entries) {
  std::string out(16 + entries.size() * k_index_entry_size + 4, '\0');
  std::memcpy(out.data(), k_index_magic, 8);
  put_u64(out.data() + 8, entries.size());
  char* p = out.data() + 16;
  for (const auto& e : entries) {
    put_u32(p, e.partition);
    put_u32(p + 4, e.position);
    put_u64(p + 8, e.offset);
    p += k_index_entry_size;
  }
  put_u32(p, crc32c(out.data(), out.size() - 4));
  return out;
}

bool decode_index(std::string_view bytes, std::vector<index_entry>& entries) {
  if (bytes.size() < 20 || std::memcmp(bytes.data(), k_index_magic, 8) != 0)
    return false;
  const std::uint64_t n = get_u64(bytes.data() + 8);
  if (n > (bytes.size() - 20) / k_index_entry_size || bytes.size() != 20 + n * k_index_entry_size)
    return false;
  if (crc32c(bytes.data(), bytes.size() - 4) != get_u32(bytes.data() + bytes.size() - 4))
    return false;
  entries.resize(n);
  const char* p = bytes.data() + 16;
  for (auto& e : entries) {
    e.partition = get_u32(p);
    e.position = get_u32(p + 4);
    e.offset = get_u64(p + 8);
    p += k_index_entry_size;
  }
  return true;
}

} // namespace sandboxd::events::file_log_format
