// file_log_format.hpp — the on-disk format of file_log (docs/log-format.md), in one place.
//
// A log directory holds LOCK, META and numbered segment files (NNNNNNNNNNNNNNNNNNNN.log),
// each with an optional index (.idx). A segment is a 16-byte segment header followed by
// batches; a batch is what one group commit wrote with one write and one fdatasync. All
// integers are little-endian.
//
//   segment header: magic "SBXLOG01" (8 bytes), segment number (u64).
//   batch header:   magic 0x42584253 "SBXB" (u32), crc (u32), length (u32), count (u32).
//                   crc is the CRC-32C of the header's last 8 bytes and the `length` body
//                   bytes that follow: a batch is valid as a whole or not at all.
//   record:         crc (u32), key length (u32), value length (u32), partition (u32),
//                   offset (u64), key bytes, value bytes. crc is the CRC-32C of everything
//                   after the crc field, so a reader checks one record on its own.
//   index entry:    partition (u32), position of the record in its segment (u32),
//                   offset (u64).
//
// The functions here only encode and check bytes; they never touch files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::events::file_log_format {

inline constexpr char k_segment_magic[8] = {'S', 'B', 'X', 'L', 'O', 'G', '0', '1'};
inline constexpr std::size_t k_segment_header_size = 16;
inline constexpr std::uint32_t k_batch_magic = 0x42584253; // "SBXB" when read little-endian
inline constexpr std::size_t k_batch_header_size = 16;
inline constexpr std::size_t k_record_header_size = 24;
inline constexpr char k_index_magic[8] = {'S', 'B', 'X', 'I', 'D', 'X', '0', '1'};
inline constexpr std::size_t k_index_entry_size = 16;
// A segment never grows past this, so a position fits the index's u32.
inline constexpr std::uint64_t k_max_segment_bytes = std::uint64_t{1} << 31;
// The largest batch body: one batch alone in a segment of the largest size. (It also keeps
// the header's u32 length from wrapping.) A larger append is refused, never written.
inline constexpr std::uint64_t k_max_batch_body_bytes =
  k_max_segment_bytes - k_segment_header_size - k_batch_header_size;

// Little-endian stores and loads (x86-64 and arm64 are little-endian; memcpy keeps them
// free of alignment requirements).
inline void put_u32(char* p, std::uint32_t v) {
  std::memcpy(p, &v, 4);
}
inline void put_u64(char* p, std::uint64_t v) {
  std::memcpy(p, &v, 8);
}
inline std::uint32_t get_u32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t get_u64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline std::size_t record_size(std::size_t key_size, std::size_t value_size) {
  return k_record_header_size + key_size + value_size;
}

// Appends one framed record to `out`.
void append_record(std::string& out, std::uint32_t partition, std::uint64_t offset,
                   std::string_view key, std::string_view value);

// A record as it lies in a mapped segment (views into the mapping).
struct record_view {
  std::uint32_t partition = 0;
  std::uint64_t offset = 0;
  std::string_view key;
  std::string_view value;
  std::size_t size = 0; // header + key + value
};

// Checks and decodes the record at `p`, which has `available` bytes after it. False when
// the record does not fit or its CRC does not match.
bool read_record(const char* p, std::size_t available, record_view& out);

// The 16 batch header bytes for `body` with `count` records.
void make_batch_header(char* header, std::string_view body, std::uint32_t count);

enum class batch_check { ok, truncated, bad_magic, bad_length, bad_crc };

// Checks the batch at `p` with `available` bytes after it; on ok, sets body length and count.
batch_check check_batch(const char* p, std::size_t available, std::uint32_t& body_length,
                        std::uint32_t& count);

std::string_view to_string(batch_check c);

void make_segment_header(char* header, std::uint64_t segment_number);
bool check_segment_header(const char* p, std::size_t available, std::uint64_t segment_number);

// "00000000000000000042.log" / ".idx"
std::string segment_file_name(std::uint64_t segment_number);
std::string index_file_name(std::uint64_t segment_number);
// The number of a segment file name, or false when the name is not one.
bool parse_segment_file_name(std::string_view name, std::uint64_t& segment_number);

struct index_entry {
  std::uint32_t partition = 0;
  std::uint32_t position = 0;
  std::uint64_t offset = 0;
};

// An index file: magic, entry count (u64), the entries, then the CRC-32C of all of it (u32).
std::string encode_index(const std::vector<index_entry>& entries);
// False when the bytes are not a complete, intact index.
bool decode_index(std::string_view bytes, std::vector<index_entry>& entries);

} // namespace sandboxd::events::file_log_format
