// pool_actor.hpp — the actor of one warm pool (docs/pools.md): the CAF shell around its
// pool_table. It creates the pool's sandboxes through the sandbox directory (tenant
// events::k_pool_tenant, principal "pool", the pool's key in `created.pool`), keeps the
// running ones ready, hands each out once (take), retires the ones it no longer needs, and
// refills at its rate. Internal to actors/ (it pulls in CAF); control_plane.cpp spawns it.
//
//   pool <- (pool_take_atom, take_ptr)             a claim wants a ready sandbox (or a miss)
//   pool <- (pool_give_atom, id, content, discard) a taken sandbox's claim was never sent
//                                                  (ready again), or was refused (deleted)
//   pool <- (pool_made_atom, made_ptr)             a create the pool sent was answered
//   pool <- (pool_spec_atom, spec_ptr)             the node resolved the pool's template
//   pool <- (pool_set_atom, settings_ptr)          new settings; `retiring`: drain and stop
//   pool <- (pool_tick_atom)                       a wake-up the pool asked for is due
//   pool <- (pool_figures_atom, figures_ptr)       what it holds (sandboxctl pool list)
//   pool <- (pool_deleted_atom)                    a delete it sent settled
//   pool <- (stop_atom)                            the control plane stops
#pragma once

#include "actors/actor_context.hpp"
#include "actors/messages.hpp"
#include "actors/pool_table.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::actors {

using pool_take_atom = caf::atom_constant<caf::atom("pltake")>;
using pool_give_atom = caf::atom_constant<caf::atom("plgive")>;
using pool_made_atom = caf::atom_constant<caf::atom("plmade")>;
using pool_spec_atom = caf::atom_constant<caf::atom("plspec")>;
using pool_set_atom = caf::atom_constant<caf::atom("plset")>;
using pool_tick_atom = caf::atom_constant<caf::atom("pltick")>;
using pool_figures_atom = caf::atom_constant<caf::atom("plfigures")>;
using pool_deleted_atom = caf::atom_constant<caf::atom("pldeleted")>;

// A claim's request for a ready sandbox of template content `content_id`; `done` gets its id,
// or nullopt (a miss), on the pool's thread: quick, never blocking.
struct take_request {
  std::string content_id;
  std::function<void(std::optional<std::string>)> done;
};
struct take_ptr {
  std::shared_ptr<take_request> value;
};
struct made_report {
  events::time_point started{};
  command_reply reply;
};
struct made_ptr {
  std::shared_ptr<made_report> value;
};
struct spec_result {
  std::variant<pool_spec, events::error> value;
};
struct spec_ptr {
  std::shared_ptr<spec_result> value;
};
struct settings_ptr {
  std::shared_ptr<pool_settings> value;
  bool retiring = false;
};
struct figures_ptr {
  std::shared_ptr<std::function<void(pool_figures)>> value;
};

using pool_handle =
  caf::typed_actor<caf::reacts_to<pool_take_atom, take_ptr>,
                   caf::reacts_to<pool_give_atom, std::string, std::string, bool>,
                   caf::reacts_to<pool_made_atom, made_ptr>,
                   caf::reacts_to<pool_spec_atom, spec_ptr>,
                   caf::reacts_to<pool_set_atom, settings_ptr>, caf::reacts_to<pool_tick_atom>,
                   caf::reacts_to<pool_figures_atom, figures_ptr>,
                   caf::reacts_to<pool_deleted_atom>, caf::reacts_to<stop_atom>>;

// What a pool actor works with; outlives it.
struct pool_services {
  actor_context* ctx = nullptr;
  directory_handle directory;
  pool_spec_fn spec;              // empty: the key alone (no template content: hollow, tests)
  timer_queue* wakeups = nullptr; // on the system clock; fires (key, any kind) at the pool
};

// A running pool sandbox recovery found, to be ready again.
struct adopted_sandbox {
  std::string id;
  std::string content_id;
};

pool_handle spawn_pool_actor(caf::actor_system& sys, pool_services services, pool_settings settings,
                             std::vector<adopted_sandbox> adopted);

} // namespace sandboxd::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::take_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::made_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::spec_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::settings_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sandboxd::actors::figures_ptr)
