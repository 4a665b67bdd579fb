#include "base/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sandboxd {

namespace {

constexpr std::uint32_t k_polynomial = 0x82F63B78; // reflected 0x1EDC6F41

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) != 0 ? (c >> 1) ^ k_polynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr auto k_table = make_table();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t extend_sse42(std::uint32_t crc, const void* data,
                                                             std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t c = ~crc;
  while (size >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    size -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (size > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --size;
  }
  return ~c32;
}

const bool k_have_sse42 = __builtin_cpu_supports("sse4.2");
#endif

} // namespace

std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  for (std::size_t i = 0; i < size; ++i)
    c = k_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) {
#if defined(__x86_64__)
  if (k_have_sse42)
    return extend_sse42(crc, data, size);
#endif
  return crc32c_extend_portable(crc, data, size);
}

} // namespace sandboxd
