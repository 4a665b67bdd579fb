#include "projections/sha256.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace sandboxd::projections {

namespace {

// OpenSSL 3's one-shot SHA256() looks the algorithm up by name and allocates a context on
// every call, which costs more than hashing an audit row; the algorithm is fetched once
// and each thread keeps one context.
const EVP_MD* sha256_md() {
  static const std::unique_ptr<EVP_MD, decltype(&EVP_MD_free)> md(
    EVP_MD_fetch(nullptr, "SHA256", nullptr), &EVP_MD_free);
  if (!md)
    throw std::runtime_error("OpenSSL has no SHA-256 (EVP_MD_fetch failed)");
  return md.get();
}

std::string digest_hex(std::string_view a, std::string_view b) {
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                                 &EVP_MD_CTX_free);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!ctx || !EVP_DigestInit_ex2(ctx.get(), sha256_md(), nullptr) ||
      !EVP_DigestUpdate(ctx.get(), a.data(), a.size()) ||
      !EVP_DigestUpdate(ctx.get(), b.data(), b.size()) || !EVP_DigestFinal_ex(ctx.get(), md, &size))
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (unsigned int i = 0; i < size; ++i) {
    out[2 * i] = digits[md[i] >> 4];
    out[2 * i + 1] = digits[md[i] & 0xf];
  }
  return out;
}

} // namespace

std::string sha256_hex(std::string_view data) {
  return digest_hex(data, {});
}

std::string sha256_hex(std::string_view a, std::string_view b) {
  return digest_hex(a, b);
}

} // namespace sandboxd::projections
