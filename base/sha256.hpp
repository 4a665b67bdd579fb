// sha256.hpp — SHA-256 (OpenSSL), incrementally or in one call, as bytes or lowercase hex:
// file contents written through the API, template trees, migration checksums, the audit
// hash chain.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace sandboxd {

using sha256_digest = std::array<std::uint8_t, 32>;

// An incremental hasher: add() any number of times, then finish() once.
class sha256 {
public:
  sha256();
  ~sha256();
  sha256(const sha256&) = delete;
  sha256& operator=(const sha256&) = delete;

  void add(std::string_view data);
  sha256_digest finish();

private:
  evp_md_ctx_st* ctx_;
};

sha256_digest sha256_of(std::string_view data);

// 64 lowercase hex digits.
std::string to_hex(const sha256_digest& digest);

// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

// The SHA-256 of `a` followed by `b` (without joining them first), as sha256_hex.
std::string sha256_hex(std::string_view a, std::string_view b);

} // namespace sandboxd
