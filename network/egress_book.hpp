// egress_book — what the egress proxy and resolver know of the node's links: which sandbox
// (and tenant) is behind each link's sandbox address, and which addresses sandboxd's
// resolver answered to each sandbox for each name (policy.hpp's `name_resolves`: a name
// allows only an address the resolver gave for it). Thread-safe; in memory only (after a
// restart of sandboxd a sandbox asks its resolver again before a name allows anything).
#pragma once

#include "network/address.hpp"

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::network {

struct link_owner {
  std::string sandbox_id;
  std::string tenant;
  bool operator==(const link_owner&) const = default;
};

class egress_book {
public:
  using clock = std::chrono::steady_clock;

  // An answer is kept at least this long whatever its TTL (clients cache names longer
  // than their TTL), at most a day.
  static constexpr std::chrono::seconds k_min_keep{600};
  // The most names kept per sandbox; past it the one that expires first goes.
  static constexpr std::size_t k_max_names = 4096;

  void add_link(const ip_address& sandbox_address, link_owner owner);
  // Forgets the sandbox's link(s) and answers.
  void remove_sandbox(const std::string& sandbox_id);
  std::optional<link_owner> owner_of(const ip_address& a) const;
  std::size_t links() const;

  void note_answer(const std::string& sandbox_id, const std::string& name,
                   const std::vector<ip_address>& addresses, std::chrono::seconds ttl,
                   clock::time_point now);
  // Whether the resolver answered `a` for `name` to the sandbox and the answer is kept.
  bool answered(const std::string& sandbox_id, const std::string& name, const ip_address& a,
                clock::time_point now) const;

private:
  struct answer {
    std::vector<ip_address> addresses;
    clock::time_point until;
  };
  mutable std::mutex mu_;
  std::map<ip_address, link_owner> links_;
  std::map<std::string, std::map<std::string, answer>> answers_; // sandbox -> name -> answer
};

} // namespace sandboxd::network
