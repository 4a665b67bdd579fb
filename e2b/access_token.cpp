#include "e2b/access_token.hpp"

#include "e2b/proto_json.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace sandboxd::e2b {

namespace {

constexpr std::string_view k_prefix = "sbxat_";
constexpr std::size_t k_key_bytes = 32;
constexpr std::size_t k_nonce_bytes = 12;
constexpr std::size_t k_tag_bytes = 16;
// A token is refused unread past this length (an API key of a few hundred bytes fits).
constexpr std::size_t k_max_token_chars = 4096;

using cipher_ctx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

std::string base64url(std::string_view bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0)
    out.push_back(alphabet[(acc << (6 - bits)) & 63]);
  return out;
}

const unsigned char* bytes_of(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

} // namespace

token_sealer::token_sealer(std::string key) : key_(std::move(key)) {
  if (key_.size() != k_key_bytes)
    throw std::invalid_argument("an access-token key must be 32 bytes");
}

std::string token_sealer::seal(std::string_view sandbox_id, std::string_view api_key) const {
  std::string plain(sandbox_id);
  plain.push_back('\0');
  plain.append(api_key);
  std::string out(k_nonce_bytes + plain.size() + k_tag_bytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, k_nonce_bytes) != 1)
    throw std::runtime_error("the system's random source failed");
  cipher_ctx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  int n = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, bytes_of(key_), o) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, bytes_of(sandbox_id),
                        static_cast<int>(sandbox_id.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), o + k_nonce_bytes, &n, bytes_of(plain),
                        static_cast<int>(plain.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), o + k_nonce_bytes + n, &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, k_tag_bytes,
                          o + k_nonce_bytes + plain.size()) != 1)
    throw std::runtime_error("AES-256-GCM failed to seal an access token");
  return std::string(k_prefix) + base64url(out);
}

std::optional<std::string> token_sealer::open(std::string_view token,
                                              std::string_view sandbox_id) const {
  if (token.size() > k_max_token_chars || token.substr(0, k_prefix.size()) != k_prefix)
    return std::nullopt;
  auto raw = decode_base64(token.substr(k_prefix.size()));
  if (!raw || raw->size() < k_nonce_bytes + k_tag_bytes + 1)
    return std::nullopt;
  const auto* r = bytes_of(*raw);
  const std::size_t cipher_bytes = raw->size() - k_nonce_bytes - k_tag_bytes;
  std::string plain(cipher_bytes, '\0');
  auto* p = reinterpret_cast<unsigned char*>(plain.data());
  cipher_ctx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  int n = 0;
  std::string tag(raw->substr(k_nonce_bytes + cipher_bytes));
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, bytes_of(key_), r) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, bytes_of(sandbox_id),
                        static_cast<int>(sandbox_id.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), p, &n, r + k_nonce_bytes, static_cast<int>(cipher_bytes)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, k_tag_bytes, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), p + n, &n) != 1)
    return std::nullopt;
  const auto nul = plain.find('\0');
  if (nul == std::string::npos || std::string_view(plain).substr(0, nul) != sandbox_id)
    return std::nullopt;
  return plain.substr(nul + 1);
}

std::string token_sealer::load_or_make_key(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    std::string key(k_key_bytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), k_key_bytes) != 1)
      throw std::runtime_error("the system's random source failed");
    const std::string tmp = path + ".tmp";
    ::unlink(tmp.c_str());
    int w = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (w < 0 || ::write(w, key.data(), key.size()) != static_cast<ssize_t>(key.size()) ||
        ::fsync(w) != 0 || ::close(w) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    return key;
  }
  if (fd < 0)
    throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::string key(k_key_bytes + 1, '\0');
  const auto got = ::read(fd, key.data(), key.size());
  const bool stat_ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!stat_ok || (st.st_mode & 077) != 0)
    throw std::runtime_error(path + " may be read by others than its owner; chmod 600 it");
  if (got != static_cast<ssize_t>(k_key_bytes))
    throw std::runtime_error(path + " is not a 32-byte key; remove it to make a new one (every "
                                    "access token handed out so far stops working)");
  key.resize(k_key_bytes);
  return key;
}

} // namespace sandboxd::e2b
