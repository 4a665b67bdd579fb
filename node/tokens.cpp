#include "node/tokens.hpp"

#include "node/start_error.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <toml++/toml.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace sandboxd::node {
namespace {

constexpr std::string_view k_prefix = "sbd_";

std::string hex(const std::uint8_t* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

std::optional<token_digest> parse_digest(std::string_view h) {
  if (h.size() != 64)
    return std::nullopt;
  token_digest d{};
  for (std::size_t i = 0; i < 32; ++i) {
    int v = 0;
    for (std::size_t j = 0; j < 2; ++j) {
      const char c = h[2 * i + j];
      int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (x < 0)
        return std::nullopt;
      v = v * 16 + x;
    }
    d[i] = static_cast<std::uint8_t>(v);
  }
  return d;
}

bool valid_tenant(std::string_view t) {
  if (t.empty() || t.size() > 64)
    return false;
  for (char c : t)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

bool valid_principal(std::string_view p) {
  if (p.empty() || p.size() > 256)
    return false;
  for (char c : p)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return false;
  return true;
}

events::error bad(const std::string& where, const std::string& what) {
  return events::make_error(events::errc::invalid_argument, where + ": " + what);
}

} // namespace

std::string_view to_string(scope s) {
  return s == scope::admin ? "admin" : "sandboxes";
}

std::optional<scope> parse_scope(std::string_view name) {
  if (name == "sandboxes")
    return scope::sandboxes;
  if (name == "admin")
    return scope::admin;
  return std::nullopt;
}

bool token_identity::has(scope s) const {
  for (auto x : scopes)
    if (x == s)
      return true;
  return false;
}

std::optional<events::error> token_table::add(const token_digest& sha256, token_identity who) {
  for (const auto& e : entries_)
    if (e.sha256 == sha256)
      return events::make_error(events::errc::invalid_argument,
                                "token " + hex(sha256.data(), 8) + "… is listed twice (tenant " +
                                  e.who.tenant + " and tenant " + who.tenant +
                                  "); a token names one identity: remove one entry");
  entries_.push_back(entry{sha256, std::move(who)});
  return std::nullopt;
}

std::optional<token_identity> token_table::authenticate(std::string_view token) const {
  const token_digest d = token_sha256(token);
  const entry* found = nullptr;
  for (const auto& e : entries_) {
    // Every entry is compared in full; the branch below only picks the result.
    const bool same = CRYPTO_memcmp(e.sha256.data(), d.data(), d.size()) == 0;
    found = same ? &e : found;
  }
  if (!found)
    return std::nullopt;
  return found->who;
}

token_digest token_sha256(std::string_view token) {
  return sandboxd::sha256_of(token);
}

std::string make_token() {
  std::uint8_t bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw std::runtime_error("no random bytes for a token (OpenSSL RAND_bytes failed)");
  return std::string(k_prefix) + hex(bytes, sizeof bytes);
}

token_table_result parse_tokens(std::string_view toml_text, const std::string& source) {
  token_table_result out;
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream m;
    m << source << " line " << e.source().begin.line << ": " << e.description()
      << "; fix the TOML syntax";
    out.failure = events::make_error(events::errc::invalid_argument, m.str());
    return out;
  }
  token_table table;
  for (auto&& [key, value] : doc) {
    if (key.str() != "token") {
      out.failure = bad(source, "unknown key `" + std::string(key.str()) +
                                  "`; a tokens file holds only [[token]] entries");
      return out;
    }
  }
  const toml::array* entries = doc["token"].as_array();
  if (doc.contains("token") && !entries) {
    out.failure = bad(source, "`token` must be an array of tables ([[token]])");
    return out;
  }
  std::size_t n = 0;
  static const toml::array no_entries;
  for (const toml::node& item : entries ? *entries : no_entries) {
    ++n;
    const std::string where = source + " [[token]] #" + std::to_string(n);
    const toml::table* t = item.as_table();
    if (!t) {
      out.failure = bad(where, "is not a table");
      return out;
    }
    for (auto&& [key, value] : *t) {
      const auto k = key.str();
      if (k != "sha256" && k != "tenant" && k != "principal" && k != "scopes") {
        out.failure = bad(where, "unknown key `" + std::string(k) +
                                   "`; the keys are sha256, tenant, principal, scopes");
        return out;
      }
    }
    const auto hash = (*t)["sha256"].value<std::string>();
    const auto digest = hash ? parse_digest(*hash) : std::nullopt;
    if (!digest) {
      out.failure = bad(where, "sha256 must be the token's SHA-256 as 64 lowercase hex digits "
                               "(printf %s \"$TOKEN\" | sha256sum)");
      return out;
    }
    token_identity who;
    who.tenant = (*t)["tenant"].value<std::string>().value_or("");
    if (!valid_tenant(who.tenant)) {
      out.failure = bad(where, "tenant must be 1-64 letters, digits, '.', '_' or '-'");
      return out;
    }
    who.principal = (*t)["principal"].value<std::string>().value_or("");
    if (!valid_principal(who.principal)) {
      out.failure = bad(where, "principal must be 1-256 printable characters");
      return out;
    }
    const toml::array* scopes = (*t)["scopes"].as_array();
    if (!scopes || scopes->empty()) {
      out.failure = bad(where, "scopes must be a non-empty array of \"sandboxes\", \"admin\"");
      return out;
    }
    for (const toml::node& s : *scopes) {
      const auto name = s.value<std::string>();
      const auto sc = name ? parse_scope(*name) : std::nullopt;
      if (!sc) {
        out.failure =
          bad(where, "unknown scope " + (name ? "\"" + *name + "\"" : "(not a string)") +
                       "; the scopes are \"sandboxes\" and \"admin\"");
        return out;
      }
      if (!who.has(*sc))
        who.scopes.push_back(*sc);
    }
    if (auto e = table.add(*digest, std::move(who))) {
      out.failure = bad(where, e->message);
      return out;
    }
  }
  out.value = std::move(table);
  return out;
}

token_table_result load_tokens(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    token_table_result r;
    r.failure =
      events::make_error(events::errc::not_found, "cannot read tokens file " + path + ": " +
                                                    std::strerror(errno) + "; fix --tokens-file");
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_tokens(ss.str(), path);
}

token_identity dev_token_identity() {
  return token_identity{"dev", "dev", {scope::sandboxes, scope::admin}};
}

dev_token ensure_dev_token(const std::string& path) {
  dev_token out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    struct stat st {};
    ::fstat(fd, &st);
    std::string text(4096, '\0');
    const ssize_t n = ::read(fd, text.data(), text.size());
    ::close(fd);
    if (!S_ISREG(st.st_mode) || (st.st_mode & 0777) != 0600 || st.st_uid != ::geteuid())
      throw start_error("the development token " + path +
                        " must be a regular file of mode 0600 owned by sandboxd's user; it is "
                        "not, so it may have been read by others: delete it (a new one is made)");
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    if (text.size() != k_prefix.size() + 64 || text.rfind(k_prefix, 0) != 0)
      throw start_error("the development token " + path +
                        " does not hold one sbd_ token; delete it (a new one is made)");
    out.token = text;
    return out;
  }
  if (errno != ENOENT)
    throw start_error("cannot read the development token " + path + ": " + std::strerror(errno));
  out.token = make_token();
  out.made = true;
  const std::string tmp = path + ".next";
  const int w = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  const std::string line = out.token + "\n";
  const bool ok = w >= 0 && ::fchmod(w, 0600) == 0 &&
                  ::write(w, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  ::fsync(w) == 0;
  if (w >= 0)
    ::close(w);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    throw start_error("cannot write the development token " + path + ": " + std::strerror(errno));
  return out;
}

} // namespace sandboxd::node
