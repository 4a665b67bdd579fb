#include "network/egress_book.hpp"

#include <algorithm>

namespace sandboxd::network {

void egress_book::add_link(const ip_address& sandbox_address, link_owner owner) {
  std::lock_guard l(mu_);
  links_[sandbox_address.unmapped()] = std::move(owner);
}

void egress_book::remove_sandbox(const std::string& sandbox_id) {
  std::lock_guard l(mu_);
  std::erase_if(links_, [&](const auto& e) { return e.second.sandbox_id == sandbox_id; });
  answers_.erase(sandbox_id);
}

std::optional<link_owner> egress_book::owner_of(const ip_address& a) const {
  std::lock_guard l(mu_);
  auto it = links_.find(a.unmapped());
  if (it == links_.end())
    return std::nullopt;
  return it->second;
}

std::size_t egress_book::links() const {
  std::lock_guard l(mu_);
  return links_.size();
}

void egress_book::note_answer(const std::string& sandbox_id, const std::string& name,
                              const std::vector<ip_address>& addresses, std::chrono::seconds ttl,
                              clock::time_point now) {
  if (addresses.empty())
    return;
  const auto keep = std::clamp<std::chrono::seconds>(ttl, k_min_keep, std::chrono::hours(24));
  std::lock_guard l(mu_);
  auto& names = answers_[sandbox_id];
  std::erase_if(names, [&](const auto& e) { return e.second.until <= now; });
  auto& a = names[name];
  for (const auto& x : addresses)
    if (std::find(a.addresses.begin(), a.addresses.end(), x.unmapped()) == a.addresses.end())
      a.addresses.push_back(x.unmapped());
  if (a.addresses.size() > 64) // a name answered with ever new addresses keeps the latest
    a.addresses.erase(a.addresses.begin(), a.addresses.end() - 64);
  a.until = std::max(a.until, now + keep);
  while (names.size() > k_max_names) {
    auto first = std::min_element(names.begin(), names.end(), [](const auto& x, const auto& y) {
      return x.second.until < y.second.until;
    });
    names.erase(first);
  }
}

bool egress_book::answered(const std::string& sandbox_id, const std::string& name,
                           const ip_address& a, clock::time_point now) const {
  std::lock_guard l(mu_);
  auto s = answers_.find(sandbox_id);
  if (s == answers_.end())
    return false;
  auto n = s->second.find(name);
  if (n == s->second.end() || n->second.until <= now)
    return false;
  const auto& v = n->second.addresses;
  return std::find(v.begin(), v.end(), a.unmapped()) != v.end();
}

} // namespace sandboxd::network
