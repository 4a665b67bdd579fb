#include "base/sha256.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace sandboxd {
namespace {

// OpenSSL 3's one-shot SHA256() looks the algorithm up by name and allocates a context on
// every call, which costs more than hashing an audit row; the algorithm is fetched once
// and each thread keeps one context for the one-call functions.
const EVP_MD* sha256_md() {
  static const std::unique_ptr<EVP_MD, decltype(&EVP_MD_free)> md(
    EVP_MD_fetch(nullptr, "SHA256", nullptr), &EVP_MD_free);
  if (!md)
    throw std::runtime_error("OpenSSL has no SHA-256 (EVP_MD_fetch failed)");
  return md.get();
}

void check(int ok) {
  if (!ok)
    throw std::runtime_error("SHA-256 failed in OpenSSL");
}

sha256_digest digest_of(std::string_view a, std::string_view b) {
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                                 &EVP_MD_CTX_free);
  sha256_digest out{};
  unsigned int size = 0;
  check(ctx && EVP_DigestInit_ex2(ctx.get(), sha256_md(), nullptr) &&
        EVP_DigestUpdate(ctx.get(), a.data(), a.size()) &&
        EVP_DigestUpdate(ctx.get(), b.data(), b.size()) &&
        EVP_DigestFinal_ex(ctx.get(), out.data(), &size));
  return out;
}

} // namespace

sha256::sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || !EVP_DigestInit_ex2(ctx_, sha256_md(), nullptr)) {
    EVP_MD_CTX_free(ctx_);
    throw std::runtime_error("SHA-256 failed in OpenSSL");
  }
}

sha256::~sha256() {
  EVP_MD_CTX_free(ctx_);
}

void sha256::add(std::string_view data) {
  check(EVP_DigestUpdate(ctx_, data.data(), data.size()));
}

sha256_digest sha256::finish() {
  sha256_digest out{};
  unsigned int size = 0;
  check(EVP_DigestFinal_ex(ctx_, out.data(), &size));
  return out;
}

sha256_digest sha256_of(std::string_view data) {
  return digest_of(data, {});
}

std::string to_hex(const sha256_digest& digest) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * digest.size(), '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = digits[digest[i] >> 4];
    out[2 * i + 1] = digits[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  return to_hex(digest_of(data, {}));
}

std::string sha256_hex(std::string_view a, std::string_view b) {
  return to_hex(digest_of(a, b));
}

} // namespace sandboxd
