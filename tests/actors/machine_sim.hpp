// machine_sim.hpp — drives one sandbox through decide and evolve, as the actor would:
// the events of an accepted command are applied and kept in a log.
#pragma once

#include "actors/sandbox_machine.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace sandboxd::actors::testing {

inline constexpr time_point k_t0{std::chrono::seconds(1'800'000'000)};
inline const std::string k_sandbox = "sb_1";
inline const std::string k_tenant = "acme";

// A valid spec: idle timeout 5 min (pause, filesystem), lifetime 1 h, retention 24 h.
inline events::created canonical_spec(std::string client_request_id = "req-1") {
  using namespace std::chrono_literals;
  events::created spec;
  spec.template_name = "python-3.12";
  spec.limits = {512, 1000, 256, 2048};
  spec.timeouts = {5min, events::idle_action::pause_sandbox, events::pause_mode::filesystem, 1h,
                   24h};
  spec.network = {events::network_mode::allow_list, {"pypi.org"}};
  spec.labels = {{"team", "ml"}};
  spec.runtime = events::runtime_kind::runsc;
  spec.client_request_id = std::move(client_request_id);
  return spec;
}

// A warm pool's spec: the pool key, no labels, environment, timeouts or request id (those
// come with a claim), network none.
inline events::created pool_spec() {
  auto spec = canonical_spec("");
  spec.labels.clear();
  spec.timeouts = {};
  spec.network = {};
  spec.pool = "python-3.12/runsc/m512/c1000/p256/d2048";
  return spec;
}

// What a create asks for beyond the pool's key, as a claim: canonical_spec's labels and
// timeouts, an environment variable (so that the claim has a runtime step), and
// `client_request_id`.
inline events::claim_requested canonical_claim(std::string client_request_id = "req-1") {
  auto spec = canonical_spec(std::move(client_request_id));
  return {
    spec.labels, {{"MODE", "eval", false, std::nullopt}}, spec.timeouts, spec.client_request_id};
}

// A TCP connection to pypi.org (allowed by canonical_spec's policy) at an address the
// resolver gave for it.
inline events::net_destination allowed_destination() {
  events::net_destination d;
  d.protocol = events::net_protocol::tcp;
  d.name = "pypi.org";
  d.source = events::name_source::tls_sni;
  d.address = "198.51.100.7";
  d.port = 443;
  d.address_class = "public";
  d.name_resolves = true;
  return d;
}

// As the caller of `body` would send it: a pool sandbox's create comes from the pool tenant
// (the system), everything else from k_tenant's alice.
inline command make_command(command_body body) {
  if (const auto* c = std::get_if<cmd::create>(&body); c && !c->spec.pool.empty())
    return command{std::string(events::k_pool_tenant), "system", "pool-1", "", std::move(body)};
  return command{k_tenant, "alice@acme", "corr-1", "cause-1", std::move(body)};
}

struct machine_sim {
  sandbox_state state = initial_state(k_sandbox);
  std::vector<events::event> log;
  time_point now = k_t0;

  decision apply(command_body body) {
    auto d = decide(state, make_command(std::move(body)), now);
    if (d.ok())
      for (const auto& e : d.emitted()) {
        state = evolve(state, e);
        log.push_back(e);
      }
    now += std::chrono::seconds(1);
    return d;
  }
};

} // namespace sandboxd::actors::testing
