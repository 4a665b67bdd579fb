// not_owner.hpp — the one refusal that means "ask the node that owns this partition now".
//
// In a cluster (docs/cluster.md) each log partition has one owner at a time, and only the
// owner may decide commands for the partition's sandboxes. A node that does not own the
// partition — it never did, it gave it up in a rebalance, or the group coordinator fenced
// its transaction because its membership is stale — refuses with errc::unavailable and a
// message that contains "not the owner". Nothing was changed by such a refusal, so the
// caller (the RPC gateway's forwarding, api/) may send the same command again to the owner
// the membership directory names, once the directory has caught up.
#pragma once

#include "base/errc.hpp"

#include <string>
#include <string_view>

namespace sandboxd {

inline constexpr std::string_view k_not_owner = "not the owner";

// unavailable: "not the owner: <why>".
inline error not_owner(const std::string& why) {
  return make_error(errc::unavailable, std::string(k_not_owner) + ": " + why);
}

// Whether `e` is such a refusal, also when another message wraps it (an append's failure
// inside the actor's reply).
inline bool is_not_owner(const error& e) {
  return e.code == errc::unavailable && e.message.find(k_not_owner) != std::string::npos;
}
inline bool is_not_owner(errc code, std::string_view message) {
  return code == errc::unavailable && message.find(k_not_owner) != std::string_view::npos;
}

} // namespace sandboxd
