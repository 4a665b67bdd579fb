// pool_settings.hpp — what a warm pool is (docs/pools.md): its key, the sandboxes it keeps
// ready, and how fast it makes more. Plain values: the daemon's config ([[pools]]), the
// admin call and the pool actors share them.
//
// A pool's key is what a create must ask for to be served from it: the template (by name;
// the content a claim gets is checked against the template the name stands for at the
// claim), the runtime and the limits (after the node's defaults are applied). Its text,
// "<template>/<runtime>/m<MiB>/c<millicores>/p<pids>/d<disk MiB>", names the pool in the
// log (`created.pool`), in metrics and on the command line.
#pragma once

#include "events/event.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace sandboxd::actors {

struct pool_key {
  std::string template_name;
  events::runtime_kind runtime = events::runtime_kind::runsc;
  events::sandbox_limits limits;
  bool operator==(const pool_key&) const = default;
};

// "base/crun/m512/c1000/p512/d10240".
std::string to_string(const pool_key& k);

// The key a create of `spec` would be served under (its template, runtime and limits).
pool_key key_of(const events::created& spec);

struct pool_settings {
  pool_key key;
  std::uint32_t size = 0;        // ready sandboxes kept at rest
  std::uint32_t maximum = 0;     // most it holds, ready and being made, when demand grows
  double refill_per_second = 20; // creates started per second, at most
  bool operator==(const pool_settings&) const = default;
};

// Why `s` cannot be a pool (a message that names the setting), or nullopt.
std::optional<std::string> check(const pool_settings& s);

// What a pool's sandboxes are created with: its key's template, runtime and limits, and the
// template's content as the node resolves the name now (created.content). `hold` is kept
// until the creates' `created` events are durable (the template cannot go meanwhile).
struct pool_spec {
  events::created spec;
  std::shared_ptr<void> hold;
};
// The node's resolution of a pool's key into a spec, or why it cannot be made (an unknown
// template). May block (a stock template's first build): called on the blocking pool.
using pool_spec_fn = std::function<std::variant<pool_spec, events::error>(const pool_key&)>;

} // namespace sandboxd::actors
