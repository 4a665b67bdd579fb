// crc32c.hpp — CRC-32C (Castagnoli), the checksum of every file_log record.
//
// The same polynomial (0x1EDC6F41, reflected 0x82F63B78) as iSCSI, ext4, LevelDB and
// Kafka's record batches. Uses the SSE4.2 crc32 instruction when the CPU has it and a
// table otherwise; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sandboxd {

// Extends `crc` (the CRC-32C of earlier bytes, 0 for none) over `size` bytes at `data`.
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);

inline std::uint32_t crc32c(const void* data, std::size_t size) {
  return crc32c_extend(0, data, size);
}

// The table implementation, for tests comparing it with the hardware one.
std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size);

} // namespace sandboxd
