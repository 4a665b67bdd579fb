#include "actors/runtime_steps.hpp"

namespace sandboxd::actors {
namespace {

cmd::runtime_failed failed_with(const char* what, const runtime::error& e) {
  return cmd::runtime_failed{std::string(what) + " failed (" + runtime::to_string(e.code) +
                             "): " + e.message};
}

bool is_paused(runtime::sandbox_status s) {
  return s == runtime::sandbox_status::paused_filesystem ||
         s == runtime::sandbox_status::paused_memory;
}

bool has_status(runtime::driver& d, const std::string& id, runtime::sandbox_status s) {
  auto i = d.inspect(id);
  return i && i->status == s;
}

bool is_running(runtime::driver& d, const std::string& id) {
  return has_status(d, id, runtime::sandbox_status::running);
}

// The runtime has a directory for `id` but no sandbox it can inspect.
bool half_made(runtime::driver& d, const std::string& id) {
  auto i = d.inspect(id);
  return !i && i.code() == runtime::errc::not_found;
}

} // namespace

std::optional<std::vector<std::pair<std::string, std::string>>>
environment_of(const sandbox_state& s, const secret_values& secrets) {
  // The template's environment (created.content); the sandbox's own variables override the
  // template's of the same name.
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& v : s.spec.content.env) {
    bool overridden = false;
    for (const auto& own : s.spec.env)
      overridden = overridden || own.name == v.name;
    if (!overridden && !v.secret)
      env.emplace_back(v.name, v.value);
  }
  for (const auto& v : s.spec.env) {
    if (!v.secret) {
      env.emplace_back(v.name, v.value);
      continue;
    }
    auto it = secrets.find(v.name);
    if (it == secrets.end())
      return std::nullopt;
    env.emplace_back(v.name, it->second);
  }
  return env;
}

std::optional<runtime::create_request> create_request_of(const sandbox_state& s,
                                                         const secret_values& secrets) {
  runtime::create_request r;
  r.id = s.sandbox_id;
  r.template_name = s.spec.template_name;
  r.from_snapshot = s.spec.from_snapshot;
  r.tenant = s.tenant;
  if (s.spec.limits.memory_mib)
    r.limits.memory_bytes = std::uint64_t{s.spec.limits.memory_mib} << 20;
  if (s.spec.limits.cpu_millicores)
    r.limits.cpu_millis = s.spec.limits.cpu_millicores;
  if (s.spec.limits.pids)
    r.limits.pids = s.spec.limits.pids;
  r.limits.disk_bytes = std::uint64_t{s.spec.limits.disk_mib} << 20;
  r.network = s.spec.network.mode == events::network_mode::none ? runtime::network_policy::none
                                                                : runtime::network_policy::outbound;
  for (const auto& l : s.spec.content.layers)
    r.layers.push_back(to_hex(l));
  auto env = environment_of(s, secrets);
  if (!env)
    return std::nullopt;
  r.env = std::move(*env);
  return r;
}

command system_command(const sandbox_state& s, command_body body) {
  command c;
  c.tenant = s.tenant;
  c.principal = "system";
  c.body = std::move(body);
  return c;
}

command_body run_step(runtime::driver& d, const sandbox_state& s, events::runtime_step step,
                      const secret_values& secrets) {
  const std::string& id = s.sandbox_id;
  switch (step) {
  case events::runtime_step::creating: {
    const auto made = create_request_of(s, secrets);
    if (!made)
      return cmd::runtime_failed{"the values of its secret env variables were lost in a restart "
                                 "of sandboxd before the sandbox was made (the log keeps only "
                                 "their hashes); delete it and create it again"};
    const auto& request = *made;
    auto c = d.create(request);
    if (!c && c.code() == runtime::errc::conflict && half_made(d, id)) {
      // Half made by a create a crash interrupted: remove the remains and create afresh.
      d.remove(id);
      c = d.create(request);
    }
    if (!c && c.code() != runtime::errc::conflict)
      return failed_with("create", c.err());
    auto st = d.start(id);
    if (!st && !is_running(d, id)) {
      // A crash in the middle of the runtime's start can leave a sandbox that cannot be
      // started again (its start half done). A creating sandbox holds nothing yet (nothing
      // runs in it and no file was written): made afresh, once.
      d.remove(id);
      c = d.create(request);
      if (!c)
        return failed_with("create", c.err());
      st = d.start(id);
      if (!st && !is_running(d, id))
        return failed_with("start", st.err());
    }
    return cmd::runtime_started{};
  }
  case events::runtime_step::pausing: {
    const auto mode = s.pause_mode == events::pause_mode::memory ? runtime::pause_mode::memory
                                                                 : runtime::pause_mode::filesystem;
    auto p = d.pause(id, mode);
    if (!p && mode == runtime::pause_mode::filesystem &&
        has_status(d, id, runtime::sandbox_status::stopped)) {
      // Its processes ended (a crash in the middle of the pause: the container is gone, the
      // runtime's record not updated). A filesystem pause ends them anyway and keeps the
      // writable layer: started again, then paused.
      if (auto started = d.start(id); started)
        p = d.pause(id, mode);
    }
    if (!p) {
      auto i = d.inspect(id);
      if (!i || !is_paused(i->status))
        return failed_with("pause", p.err());
    }
    auto u = d.usage(id);
    return cmd::runtime_paused{u ? u->writable_bytes : s.writable_layer_bytes};
  }
  case events::runtime_step::resuming: {
    auto r = d.resume(id);
    if (!r) {
      auto i = d.inspect(id);
      if (!i || i->status != runtime::sandbox_status::running)
        return failed_with("resume", r.err());
    }
    return cmd::runtime_resumed{};
  }
  case events::runtime_step::deleting: {
    // Measured before the layer goes: `deleted` closes the storage meter on this figure, so
    // a layer written since the last sample is billed (docs/billing.md). A sandbox the runtime
    // no longer has (a remove a crash interrupted) measures nothing: 0, "not measured".
    auto u = d.usage(id);
    auto r = d.remove(id);
    if (!r && r.code() != runtime::errc::not_found)
      return failed_with("remove", r.err());
    return cmd::runtime_deleted{u ? u->writable_bytes : 0};
  }
  case events::runtime_step::claiming: {
    // The claim's environment replaces the pool's (none) in the driver's record; the sandbox
    // runs on as it is (nothing of it changes but what later execs see).
    auto env = environment_of(s, secrets);
    if (!env)
      return cmd::runtime_failed{"the values of its secret env variables were lost in a restart "
                                 "of sandboxd before the claim was applied (the log keeps none "
                                 "of them); delete it and create it again"};
    auto r = d.set_env(id, *env);
    if (!r)
      return failed_with("claim", r.err());
    return cmd::runtime_claimed{};
  }
  case events::runtime_step::running:
    break;
  }
  return cmd::runtime_failed{"no runtime step is defined for " + events::to_string(step)};
}

} // namespace sandboxd::actors
