#include "api/convert.hpp"

#include "network/policy.hpp"
#include "runtime/names.hpp"

#include <algorithm>

namespace sandboxd::api {
namespace {

using events::nanoseconds;

events::sandbox_limits limits_of(schema::Limits::Reader l, const events::sandbox_limits& d) {
  events::sandbox_limits out;
  out.memory_mib = l.getMemoryMib() ? l.getMemoryMib() : d.memory_mib;
  out.cpu_millicores = l.getCpuMillicores() ? l.getCpuMillicores() : d.cpu_millicores;
  out.pids = l.getPids() ? l.getPids() : d.pids;
  out.disk_mib = l.getDiskMib() ? l.getDiskMib() : d.disk_mib;
  return out;
}

std::optional<events::runtime_kind> runtime_named(std::string_view name) {
  for (auto k :
       {events::runtime_kind::runsc, events::runtime_kind::crun, events::runtime_kind::hollow})
    if (events::to_string(k) == name)
      return k;
  return std::nullopt;
}

} // namespace

result<void> check_ceilings(const events::sandbox_limits& limits,
                            const events::sandbox_limits& ceilings) {
  const auto over = [](const char* field, std::uint64_t v, std::uint64_t ceiling,
                       const char* unit) -> std::optional<error> {
    if (ceiling == 0 || v <= ceiling)
      return std::nullopt;
    return make_error(errc::invalid_argument,
                      std::string("limits.") + field + " " + std::to_string(v) + unit +
                        " is over this node's ceiling of " + std::to_string(ceiling) + unit +
                        "; ask for at most the ceiling (docs/api.md \"Limits\")");
  };
  if (auto e = over("memoryMib", limits.memory_mib, ceilings.memory_mib, " MiB"))
    return *e;
  if (auto e = over("cpuMillicores", limits.cpu_millicores, ceilings.cpu_millicores, ""))
    return *e;
  if (auto e = over("pids", limits.pids, ceilings.pids, ""))
    return *e;
  if (auto e = over("diskMib", limits.disk_mib, ceilings.disk_mib, " MiB"))
    return *e;
  return {};
}

result<events::sandbox_timeouts> timeouts_of(rpc::TimeoutSettings::Reader t,
                                             events::sandbox_timeouts current,
                                             events::time_point created_at,
                                             events::time_point now) {
  const auto negative = [](std::int64_t ns) { return ns < 0; };
  if (t.getTimeout().isNs() && t.getLifetime().isNs())
    return make_error(errc::invalid_argument,
                      "timeout and lifetime both set the end time; set one of them");
  if (t.getIdleTimeout().isNs()) {
    if (negative(t.getIdleTimeout().getNs()))
      return make_error(errc::invalid_argument, "idle timeout is negative; use 0 for none");
    current.idle_timeout = nanoseconds(t.getIdleTimeout().getNs());
  }
  if (t.getLifetime().isNs()) {
    if (negative(t.getLifetime().getNs()))
      return make_error(errc::invalid_argument, "lifetime is negative; use 0 for none");
    current.max_lifetime = nanoseconds(t.getLifetime().getNs());
  }
  if (t.getTimeout().isNs()) {
    const auto ns = t.getTimeout().getNs();
    if (negative(ns))
      return make_error(errc::invalid_argument, "timeout is negative; use 0 for none");
    current.max_lifetime = ns == 0 ? nanoseconds(0) : (now - created_at) + nanoseconds(ns);
  }
  if (t.getPausedRetention().isNs()) {
    if (negative(t.getPausedRetention().getNs()))
      return make_error(errc::invalid_argument, "paused retention is negative; use 0 for none");
    current.paused_retention = nanoseconds(t.getPausedRetention().getNs());
  }
  auto on = t.getOnTimeout();
  if (on.isDelete()) {
    current.on_idle = events::idle_action::delete_sandbox;
  } else if (on.isPause()) {
    current.on_idle = events::idle_action::pause_sandbox;
    current.idle_pause_mode = on.getPause() == schema::PauseMode::MEMORY
                                ? events::pause_mode::memory
                                : events::pause_mode::filesystem;
  }
  return current;
}

result<std::vector<events::env_var>> env_of(capnp::List<rpc::EnvVar>::Reader vars) {
  std::vector<events::env_var> out;
  for (auto v : vars) {
    const std::string name(v.getName().cStr(), v.getName().size());
    const std::string value(v.getValue().cStr(), v.getValue().size());
    if (name.empty() || name.find_first_of(std::string("=\0", 2)) != std::string::npos)
      return make_error(errc::invalid_argument,
                        "environment variable name '" + name +
                          "' is empty or has '=' or NUL; use a name like MY_VAR");
    if (value.find('\0') != std::string::npos)
      return make_error(errc::invalid_argument,
                        "environment variable " + name + " has a NUL byte in its value");
    events::env_var e;
    e.name = name;
    e.value = value;
    e.secret = v.getSecret();
    out.push_back(std::move(e));
  }
  return out;
}

result<events::network_policy> network_of(schema::NetworkPolicy::Reader p) {
  events::network_policy out;
  switch (p.getMode()) {
  case schema::NetworkPolicy::Mode::NONE:
    out.mode = events::network_mode::none;
    break;
  case schema::NetworkPolicy::Mode::FULL:
    out.mode = events::network_mode::full;
    break;
  case schema::NetworkPolicy::Mode::ALLOW_LIST:
    out.mode = events::network_mode::allow_list;
    break;
  default:
    return make_error(errc::invalid_argument,
                      "unknown network mode; use none, allowList or full (all)");
  }
  auto hosts = p.getAllowedHosts();
  if (hosts.size() > network::k_max_rules)
    return make_error(errc::invalid_argument,
                      "a network policy of " + std::to_string(hosts.size()) +
                        " rules is too long; give at most " + std::to_string(network::k_max_rules));
  for (auto h : hosts)
    out.allowed_hosts.push_back(whole_text(h));
  auto compiled = network::compile(out);
  if (!compiled)
    return compiled.err();
  return network::to_event(compiled.value());
}

result<void> network_within_ceiling(const events::network_policy& p, const network::ceiling& c,
                                    const std::string& tenant) {
  auto compiled = network::compile(p);
  if (!compiled)
    return compiled.err();
  return network::check_ceiling(compiled.value(), c, tenant);
}

result<events::created> created_of(rpc::CreateRequest::Reader r, const create_defaults& d) {
  events::created c;
  // The whole name as sent (a NUL included), checked before anything is logged: a name
  // the driver would refuse makes no sandbox, not a failed one.
  c.template_name = r.getTemplate().size()
                      ? std::string(r.getTemplate().begin(), r.getTemplate().size())
                      : d.template_name;
  if (auto named = runtime::check_template_name(c.template_name); !named)
    return named.err();
  if (r.getRuntime().size() == 0) {
    c.runtime = d.runtime;
  } else {
    auto k = runtime_named(whole_text(r.getRuntime()));
    if (!k || std::find(d.runtimes.begin(), d.runtimes.end(), *k) == d.runtimes.end()) {
      std::string have;
      for (auto h : d.runtimes)
        have += (have.empty() ? "" : ", ") + events::to_string(h);
      return make_error(errc::invalid_argument,
                        "runtime '" + whole_text(r.getRuntime()) +
                          "' is not one this node has; use one of: " + have);
    }
    c.runtime = *k;
  }
  c.limits = limits_of(r.getLimits(), d.limits);
  if (auto ok = check_ceilings(c.limits, d.ceilings); !ok)
    return ok.err();
  auto env = env_of(r.getEnv());
  if (!env)
    return env.err();
  c.env = std::move(env).value();
  if (auto ok = check_env(c.env, d.inputs); !ok)
    return ok.err();
  auto net = network_of(r.getNetwork());
  if (!net)
    return net.err();
  c.network = std::move(net).value();
  if (c.network.mode != events::network_mode::none &&
      std::find(d.networked.begin(), d.networked.end(), c.runtime) == d.networked.end())
    return make_error(errc::invalid_argument,
                      "this node cannot enforce a network policy for runtime " +
                        events::to_string(c.runtime) +
                        " (it has no link range, docs/network.md); create the sandbox with "
                        "network none");
  for (auto l : r.getLabels()) {
    if (l.getKey().size() == 0)
      return make_error(errc::invalid_argument, "a label key is empty; give every label a key");
    c.labels.push_back({whole_text(l.getKey()), whole_text(l.getValue())});
  }
  if (auto ok = check_labels(c.labels, d.inputs); !ok)
    return ok.err();
  c.client_request_id = whole_text(r.getClientRequestId());
  if (auto ok = check_size("the client request id", c.client_request_id.size(),
                           d.inputs.client_request_id_bytes);
      !ok)
    return ok.err();
  // The defaults of a new sandbox: no timeouts (a timeout request sets them).
  auto t = timeouts_of(r.getTimeouts(), {}, events::time_point{}, events::time_point{});
  if (!t)
    return t.err();
  c.timeouts = *t;
  return c;
}

result<actors::pool_key> pool_key_of(rpc::PoolKey::Reader k, const create_defaults& d) {
  actors::pool_key key;
  key.template_name = k.getTemplate().size() ? whole_text(k.getTemplate()) : d.template_name;
  if (auto named = runtime::check_template_name(key.template_name); !named)
    return named.err();
  key.runtime = d.runtime;
  if (k.getRuntime().size() != 0) {
    auto kind = runtime_named(whole_text(k.getRuntime()));
    if (!kind)
      return make_error(errc::invalid_argument, "runtime '" + whole_text(k.getRuntime()) +
                                                  "' is unknown; use runsc, crun or hollow");
    key.runtime = *kind;
  }
  key.limits = limits_of(k.getLimits(), d.limits);
  if (auto ok = check_ceilings(key.limits, d.ceilings); !ok)
    return ok.err();
  return key;
}

rpc::SandboxState state_of(actors::sandbox_status s) {
  using S = rpc::SandboxState;
  switch (s) {
  case actors::sandbox_status::absent:
  case actors::sandbox_status::creating:
  case actors::sandbox_status::claiming: // a pool sandbox being made the tenant's
    return S::CREATING;
  case actors::sandbox_status::running:
    return S::RUNNING;
  case actors::sandbox_status::pausing:
    return S::PAUSING;
  case actors::sandbox_status::paused:
    return S::PAUSED;
  case actors::sandbox_status::resuming:
    return S::RESUMING;
  case actors::sandbox_status::deleting:
    return S::DELETING;
  case actors::sandbox_status::deleted:
    return S::DELETED;
  case actors::sandbox_status::failed:
    return S::FAILED;
  }
  return S::FAILED;
}

namespace {
constexpr std::pair<std::string_view, rpc::SandboxState> k_state_names[] = {
  {"creating", rpc::SandboxState::CREATING}, {"running", rpc::SandboxState::RUNNING},
  {"pausing", rpc::SandboxState::PAUSING},   {"paused", rpc::SandboxState::PAUSED},
  {"resuming", rpc::SandboxState::RESUMING}, {"deleting", rpc::SandboxState::DELETING},
  {"deleted", rpc::SandboxState::DELETED},   {"failed", rpc::SandboxState::FAILED},
};
} // namespace

std::optional<rpc::SandboxState> state_of(std::string_view name) {
  for (const auto& [n, s] : k_state_names)
    if (n == name)
      return s;
  return std::nullopt;
}

std::string_view name_of(rpc::SandboxState s) {
  for (const auto& [n, st] : k_state_names)
    if (st == s)
      return n;
  return ""; // a state a newer peer added: matches no row, names nothing
}

void fill(rpc::SandboxInfo::Builder out, const actors::sandbox_state& s) {
  const auto& spec = s.spec;
  out.setId(s.sandbox_id);
  out.setState(state_of(s.status));
  out.setTemplate(spec.template_name);
  out.setRuntime(events::to_string(spec.runtime));
  auto l = out.initLimits();
  l.setMemoryMib(spec.limits.memory_mib);
  l.setCpuMillicores(spec.limits.cpu_millicores);
  l.setPids(spec.limits.pids);
  l.setDiskMib(spec.limits.disk_mib);
  auto labels = out.initLabels(static_cast<unsigned>(spec.labels.size()));
  for (unsigned i = 0; i < spec.labels.size(); ++i) {
    labels[i].setKey(spec.labels[i].key);
    labels[i].setValue(spec.labels[i].value);
  }
  const auto created = s.created_at.time_since_epoch().count();
  out.setCreatedAtNs(created);
  const auto& t = spec.timeouts;
  out.setEndTimeNs(t.max_lifetime.count() > 0 ? created + t.max_lifetime.count() : 0);
  out.setPauseMode(s.pause_mode == events::pause_mode::memory ? schema::PauseMode::MEMORY
                                                              : schema::PauseMode::FILESYSTEM);
  out.setIdleTimeoutNs(t.idle_timeout.count());
  out.setLifetimeNs(t.max_lifetime.count());
  out.setPausedRetentionNs(t.paused_retention.count());
  out.setOnTimeout(t.on_idle == events::idle_action::delete_sandbox
                     ? "delete"
                     : "pause:" + events::to_string(t.idle_pause_mode));
  auto net = out.initNetwork();
  net.setMode(static_cast<schema::NetworkPolicy::Mode>(spec.network.mode));
  auto hosts = net.initAllowedHosts(static_cast<unsigned>(spec.network.allowed_hosts.size()));
  for (unsigned i = 0; i < spec.network.allowed_hosts.size(); ++i)
    hosts.set(i, spec.network.allowed_hosts[i]);
  auto env = out.initEnvNames(static_cast<unsigned>(spec.env.size()));
  for (unsigned i = 0; i < spec.env.size(); ++i)
    env.set(i, spec.env[i].name);
  out.setWritableBytes(s.writable_layer_bytes);
  out.setFailure(s.failure_reason);
  out.setSequence(s.sequence);
  out.setTenant(s.tenant);
}

} // namespace sandboxd::api
