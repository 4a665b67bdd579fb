// convert — between the RPC schema (schemas/api.capnp) and the control plane's values:
// requests into commands' settings (checked: a value the node cannot honour is an error,
// never silently dropped), sandbox states into SandboxInfo.
#pragma once

#include "actors/pool_settings.hpp"
#include "actors/sandbox_machine.hpp"
#include "api/input_limits.hpp"
#include "api/result.hpp"
#include "network/policy.hpp"
#include "schemas/api.capnp.h"

#include <chrono>
#include <string>
#include <vector>

namespace sandboxd::api {

// The whole of a Cap'n Proto Text, NUL bytes included. cStr() ends it at the first NUL, which
// would shorten a label, path or name silently; the checks after this refuse a NUL instead.
inline std::string whole_text(capnp::Text::Reader t) {
  return {t.begin(), t.size()};
}

// What a create takes when the request leaves a setting out, and what the node can do.
struct create_defaults {
  std::string template_name = "base";
  events::runtime_kind runtime = events::runtime_kind::runsc;
  std::vector<events::runtime_kind> runtimes{events::runtime_kind::runsc}; // the node has
  // A limit left out gets this, as the runtime grants it (the OCI drivers give a layer of
  // 10 GiB when asked for none), so the `created` event and the tenant's quota count what
  // the sandbox really holds.
  events::sandbox_limits limits{512, 1000, 512, 10240};
  // The largest each limit may be asked for on this node; 0: no ceiling. Over one is
  // invalid_argument naming the field, the value and the ceiling.
  events::sandbox_limits ceilings;
  // Ceilings of one exec: its output cap per stream and its timeout (0: none). A timeout
  // of 0 (run until it ends) is given the ceiling when there is one.
  std::uint64_t exec_output_ceiling_bytes = 256ull << 20;
  std::chrono::milliseconds exec_timeout_ceiling{0};
  input_limits inputs;
  // The runtime kinds whose sandboxes may have a network (the node enforces egress for
  // them, docs/network.md); a policy other than none for another kind is invalid_argument.
  std::vector<events::runtime_kind> networked;
};

// `limits` against `ceilings` (0: none).
result<void> check_ceilings(const events::sandbox_limits& limits,
                            const events::sandbox_limits& ceilings);

// Environment variables, checked: a name is non-empty and has no '=' or NUL; a value has
// no NUL. Secret values are kept here: the control plane logs only their names.
result<std::vector<events::env_var>> env_of(capnp::List<rpc::EnvVar>::Reader vars);

// A network policy as sent: every rule parsed and put in its canonical text
// (network/policy.hpp's compile), at most network::k_max_rules; invalid_argument naming the
// first bad rule or an unknown mode.
result<events::network_policy> network_of(schema::NetworkPolicy::Reader p);

// `p` (as network_of made it) against a tenant's ceiling: permission_denied naming the
// tenant, what it asked for and the ceiling.
result<void> network_within_ceiling(const events::network_policy& p, const network::ceiling& c,
                                    const std::string& tenant);

result<events::created> created_of(rpc::CreateRequest::Reader r, const create_defaults& d);

// A warm pool's key as a create of it would resolve it: the node's defaults for the template,
// runtime and limits left out (docs/pools.md).
result<actors::pool_key> pool_key_of(rpc::PoolKey::Reader k, const create_defaults& d);

// The timeouts after applying `t` to `current` (a create passes the defaults) for a sandbox
// created at `created_at`, at `now`: `timeout` ends the sandbox that long after now, which
// is kept as the lifetime counted from creation.
result<events::sandbox_timeouts> timeouts_of(rpc::TimeoutSettings::Reader t,
                                             events::sandbox_timeouts current,
                                             events::time_point created_at, events::time_point now);

rpc::SandboxState state_of(actors::sandbox_status s);
// The read model's state name ("running", ...); empty for an unknown one.
std::optional<rpc::SandboxState> state_of(std::string_view name);
std::string_view name_of(rpc::SandboxState s);

void fill(rpc::SandboxInfo::Builder out, const actors::sandbox_state& s);

} // namespace sandboxd::api
