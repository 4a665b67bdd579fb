#include "projections/sha256.hpp"

#include <openssl/sha.h>

namespace sandboxd::projections {

std::string sha256_hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * SHA256_DIGEST_LENGTH, '0');
  for (int i = 0; i < SHA256_DIGEST_LENGTH; ++i) {
    out[2 * i] = digits[md[i] >> 4];
    out[2 * i + 1] = digits[md[i] & 0xf];
  }
  return out;
}

} // namespace sandboxd::projections
