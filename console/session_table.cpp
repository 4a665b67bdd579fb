#include "console/session_table.hpp"

#include "base/sha256.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace sandboxd::console {

bool well_formed_session_id(std::string_view id) {
  return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool session_table::live(const entry& e, clock::time_point now) const {
  return now - e.last_used < limits_.idle && now - e.opened < limits_.lifetime;
}

void session_table::sweep(clock::time_point now) {
  for (auto it = by_digest_.begin(); it != by_digest_.end();)
    it = live(it->second, now) ? std::next(it) : by_digest_.erase(it);
}

result<std::string> session_table::open(api::identity who, clock::time_point now) {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw std::runtime_error("RAND_bytes failed: no random session id can be made");
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char c : bytes) {
    id.push_back(k_hex[c >> 4]);
    id.push_back(k_hex[c & 15]);
  }
  std::lock_guard l(mu_);
  sweep(now);
  // The principal's sessions, oldest first: a login past per_principal ends the oldest.
  std::vector<std::unordered_map<std::string, entry>::iterator> mine;
  for (auto it = by_digest_.begin(); it != by_digest_.end(); ++it)
    if (it->second.who.tenant == who.tenant && it->second.who.principal == who.principal)
      mine.push_back(it);
  std::sort(mine.begin(), mine.end(),
            [](const auto& a, const auto& b) { return a->second.opened < b->second.opened; });
  for (std::size_t i = 0; mine.size() - i >= limits_.per_principal && i < mine.size(); ++i)
    by_digest_.erase(mine[i]);
  if (by_digest_.size() >= limits_.capacity)
    return make_error(errc::resource_exhausted,
                      "the console has " + std::to_string(limits_.capacity) +
                        " sessions signed in, its most; sign in again once some end (they end "
                        "after " +
                        std::to_string(limits_.idle.count() / 60) + " minutes without use)");
  by_digest_.emplace(sha256_hex(id), entry{std::move(who), now, now});
  return id;
}

std::optional<api::identity> session_table::find(std::string_view id, clock::time_point now) {
  if (!well_formed_session_id(id))
    return std::nullopt;
  const std::string digest = sha256_hex(id);
  std::lock_guard l(mu_);
  auto it = by_digest_.find(digest);
  if (it == by_digest_.end())
    return std::nullopt;
  if (!live(it->second, now)) {
    by_digest_.erase(it);
    return std::nullopt;
  }
  it->second.last_used = now;
  return it->second.who;
}

void session_table::close(std::string_view id) {
  if (!well_formed_session_id(id))
    return;
  const std::string digest = sha256_hex(id);
  std::lock_guard l(mu_);
  by_digest_.erase(digest);
}

std::size_t session_table::size(clock::time_point now) {
  std::lock_guard l(mu_);
  sweep(now);
  return by_digest_.size();
}

} // namespace sandboxd::console
