#include "cli/event_view.hpp"

#include "cli/duration_arg.hpp"
#include "cli/terminal_text.hpp"
#include "cli/time_arg.hpp"

#include <type_traits>

namespace sandboxd::cli {
namespace {

using std::chrono::nanoseconds;

json names_of(const std::vector<events::env_var>& env) {
  json names = json::array();
  for (const auto& v : env)
    names.push_back(v.secret ? v.name + " (secret)" : v.name);
  return names;
}

void put_failure(json& j, const std::optional<events::error>& f) {
  if (f)
    j["failure"] = to_string(f->code) + ": " + f->message;
}

void put_digest(json& j, const std::optional<sha256_digest>& d) {
  if (d)
    j["sha256"] = hex(std::string_view(reinterpret_cast<const char*>(d->data()), d->size()));
}

void put_if(json& j, const char* key, bool v) {
  if (v)
    j[key] = true;
}

void put_duration_if(json& j, const char* key, nanoseconds d) {
  if (d.count() != 0)
    j[key] = seconds_json(d);
}

json timeouts_json(const events::sandbox_timeouts& t) {
  json j = json::object();
  put_duration_if(j, "timeout_seconds", t.timeout);
  put_duration_if(j, "idle_timeout_seconds", t.idle_timeout);
  put_duration_if(j, "lifetime_seconds", t.max_lifetime);
  put_duration_if(j, "paused_retention_seconds", t.paused_retention);
  if (t.idle_timeout.count() != 0 || t.timeout.count() != 0)
    j["on_timeout"] = t.on_idle == events::idle_action::delete_sandbox
                        ? std::string("delete")
                        : "pause:" + events::to_string(t.idle_pause_mode);
  return j;
}

// What a create (or a claim, docs/pools.md) asks for beyond its key: labels, env names,
// timeouts, request id.
template <class Asked>
json settings_json(const Asked& p) {
  json j = json::object();
  for (const auto& l : p.labels)
    j["labels"][l.key] = l.value;
  if (!p.env.empty())
    j["env"] = names_of(p.env);
  j.update(timeouts_json(p.timeouts));
  if (!p.client_request_id.empty())
    j["request_id"] = p.client_request_id;
  return j;
}

json network_json(const events::network_policy& n) {
  json j{{"network", n.mode == events::network_mode::full         ? std::string("all")
                     : n.mode == events::network_mode::allow_list ? std::string("allowlist")
                                                                  : events::to_string(n.mode)}};
  if (!n.allowed_hosts.empty())
    j["allow"] = n.allowed_hosts;
  return j;
}

json destination_json(const events::net_destination& d) {
  json j{{"protocol", events::to_string(d.protocol)}};
  if (!d.name.empty()) {
    j["name"] = d.name;
    j["name_from"] = events::to_string(d.source);
  }
  if (!d.address.empty()) {
    j["address"] = d.address;
    j["port"] = d.port;
    j["address_class"] = d.address_class;
  }
  return j;
}

struct payload_fields {
  json operator()(const events::unknown& p) const { return json{{"ordinal", p.ordinal}}; }
  json operator()(const events::created& p) const {
    json j;
    j["template"] = p.template_name;
    j["runtime"] = events::to_string(p.runtime);
    j["memory_mib"] = p.limits.memory_mib;
    j["cpu_millicores"] = p.limits.cpu_millicores;
    j["pids"] = p.limits.pids;
    if (p.limits.disk_mib)
      j["disk_mib"] = p.limits.disk_mib;
    j.update(network_json(p.network));
    j.update(settings_json(p));
    if (!p.content.id.empty()) { // the exact template content the root filesystem is made of
      j["template_id"] = p.content.id;
      if (p.content.digest)
        j["template_digest"] = to_hex(*p.content.digest);
      json layers = json::array();
      for (const auto& l : p.content.layers)
        layers.push_back(to_hex(l));
      j["template_layers"] = layers;
    }
    if (!p.pool.empty())
      j["pool"] = p.pool;
    return j;
  }
  json operator()(const events::claim_requested& p) const { return settings_json(p); }
  json operator()(const events::claimed&) const { return json::object(); }
  json operator()(const events::started&) const { return json::object(); }
  json operator()(const events::pause_requested& p) const {
    return json{{"mode", events::to_string(p.mode)}, {"reason", events::to_string(p.reason)}};
  }
  json operator()(const events::paused& p) const {
    return json{{"mode", events::to_string(p.mode)}, {"writable_bytes", p.writable_layer_bytes}};
  }
  json operator()(const events::resume_requested&) const { return json::object(); }
  json operator()(const events::resumed&) const { return json::object(); }
  json operator()(const events::delete_requested& p) const {
    return json{{"reason", events::to_string(p.reason)}};
  }
  json operator()(const events::deleted&) const { return json::object(); }
  json operator()(const events::failed& p) const {
    return json{{"step", events::to_string(p.step)}, {"reason", p.reason}};
  }
  json operator()(const events::exec_started& p) const {
    json j;
    j["exec_id"] = p.exec_id;
    j["argv"] = p.argv;
    if (!p.working_directory.empty())
      j["cwd"] = p.working_directory;
    if (!p.user.empty())
      j["user"] = p.user;
    put_duration_if(j, "timeout_seconds", p.timeout);
    if (!p.env.empty())
      j["env"] = names_of(p.env);
    if (p.stdin_bytes)
      j["stdin_bytes"] = p.stdin_bytes;
    put_if(j, "background", p.background);
    return j;
  }
  json operator()(const events::exec_finished& p) const {
    json j;
    j["exec_id"] = p.exec_id;
    j["outcome"] = events::to_string(p.outcome);
    j["exit_code"] = p.exit_code;
    if (p.signal)
      j["signal"] = p.signal;
    put_if(j, "timed_out", p.timed_out);
    put_if(j, "oom_killed", p.oom_killed);
    put_if(j, "output_truncated", p.output_truncated);
    j["duration_seconds"] = seconds_json(p.duration);
    j["stdout_bytes"] = p.stdout_bytes;
    j["stderr_bytes"] = p.stderr_bytes;
    put_failure(j, p.failure);
    return j;
  }
  json operator()(const events::file_written& p) const {
    json j{{"path", p.path}, {"bytes", p.bytes}};
    put_digest(j, p.sha256);
    return j;
  }
  json operator()(const events::file_read& p) const {
    json j{{"kind", events::to_string(p.kind)}, {"path", p.path}};
    if (p.kind == events::file_read_kind::list)
      j["entries"] = p.entries;
    else if (p.kind == events::file_read_kind::read)
      j["bytes"] = p.bytes;
    put_digest(j, p.sha256);
    put_failure(j, p.failure);
    return j;
  }
  json operator()(const events::storage_sampled& p) const {
    return json{{"writable_bytes", p.writable_layer_bytes}};
  }
  json operator()(const events::snapshot_taken& p) const {
    json j{{"snapshot_id", p.snapshot_id},
           {"writable_bytes", p.writable_layer_bytes},
           {"outcome", events::to_string(p.outcome)}};
    if (!p.op_id.empty())
      j["op_id"] = p.op_id;
    if (!p.name.empty())
      j["name"] = p.name;
    if (p.outcome == events::op_outcome::completed && !p.op_id.empty()) {
      j["referenced_bytes"] = p.referenced_bytes;
      j["exclusive_bytes"] = p.exclusive_bytes;
    }
    put_failure(j, p.failure);
    return j;
  }
  json operator()(const events::snapshot_requested& p) const {
    json j{{"op_id", p.op_id}, {"snapshot_id", p.snapshot_id}};
    if (!p.name.empty())
      j["name"] = p.name;
    return j;
  }
  json operator()(const events::snapshot_deleted& p) const {
    return json{{"snapshot_id", p.snapshot_id}};
  }
  json operator()(const events::timeout_changed& p) const { return timeouts_json(p.timeouts); }
  json operator()(const events::command_rejected& p) const {
    return json{{"command", events::to_string(p.command)},
                {"code", to_string(p.code)},
                {"message", p.message}};
  }
  json operator()(const events::file_op_requested& p) const {
    json j{{"op_id", p.op_id}, {"op", events::to_string(p.kind)}, {"path", p.path}};
    if (p.kind == events::file_op_kind::rename)
      j["to_path"] = p.to_path;
    put_if(j, "recursive", p.recursive);
    if (p.kind == events::file_op_kind::write) {
      j["bytes"] = p.bytes;
      put_digest(j, p.sha256);
    }
    return j;
  }
  json operator()(const events::file_op_finished& p) const {
    json j{{"op_id", p.op_id},
           {"op", events::to_string(p.kind)},
           {"outcome", events::to_string(p.outcome)}};
    if (p.kind == events::file_op_kind::write && p.outcome == events::op_outcome::completed) {
      j["bytes"] = p.bytes;
      put_digest(j, p.sha256);
    }
    put_failure(j, p.failure);
    return j;
  }
  json operator()(const events::exec_kill_requested& p) const {
    return json{{"exec_id", p.exec_id}, {"signal", p.signal}};
  }
  json operator()(const events::redacted& p) const { return json{{"reason", p.reason}}; }
  json operator()(const events::network_changed& p) const { return network_json(p.network); }
  json operator()(const events::connection_opened& p) const {
    json j = destination_json(p.destination);
    j["connection_id"] = p.connection_id;
    j["rule"] = p.rule;
    return j;
  }
  json operator()(const events::connection_denied& p) const {
    json j = destination_json(p.destination);
    j["reason"] = p.reason;
    if (p.repeats)
      j["repeats"] = p.repeats;
    return j;
  }
  json operator()(const events::template_event& p) const {
    json j{{"template_id", p.template_id},
           {"name", p.name},
           {"scope", events::to_string(p.scope)},
           {"change", std::string(events::change_name(p.change))}};
    std::visit(
      [&j](const auto& c) {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, events::template_created>) {
          j["source"] = events::to_string(c.source);
          j["description"] = c.description;
          if (!c.parent_id.empty())
            j["parent_id"] = c.parent_id;
        } else if constexpr (std::is_same_v<T, events::template_layer_added>) {
          j["index"] = c.index;
          j["layer"] = to_hex(c.sha256);
          j["bytes"] = c.bytes;
          j["entries"] = c.entries;
          j["origin"] = c.origin;
          put_if(j, "reused", c.reused);
        } else if constexpr (std::is_same_v<T, events::template_step_started>) {
          j["index"] = c.index;
          j["instruction"] = c.instruction;
        } else if constexpr (std::is_same_v<T, events::template_step_finished>) {
          j["index"] = c.index;
          j["outcome"] = events::to_string(c.outcome);
          put_if(j, "cached", c.cached);
          j["exit_code"] = c.exit_code;
          j["duration_seconds"] = seconds_json(c.duration);
          if (c.layer)
            j["layer"] = to_hex(*c.layer);
          put_failure(j, c.failure);
        } else if constexpr (std::is_same_v<T, events::template_ready>) {
          j["digest"] = to_hex(c.digest);
          json layers = json::array();
          for (const auto& l : c.layers)
            layers.push_back(to_hex(l.sha256));
          j["layers"] = layers;
          j["bytes"] = c.total_bytes;
        } else if constexpr (std::is_same_v<T, events::template_failed>) {
          put_failure(j, c.failure);
        } else if constexpr (std::is_same_v<T, events::template_deleted>) {
          j["reason"] = c.reason;
        } else {
          j["ordinal"] = c.ordinal;
        }
      },
      p.change);
    return j;
  }
  json operator()(const events::connection_closed& p) const {
    json j{{"connection_id", p.connection_id},
           {"bytes_out", p.bytes_out},
           {"bytes_in", p.bytes_in},
           {"duration_seconds", seconds_json(p.duration)},
           {"outcome", events::to_string(p.outcome)}};
    if (!p.error_message.empty())
      j["message"] = p.error_message;
    return j;
  }
};

// A value as terminal text (cli/terminal_text.hpp): a string with blanks, quotes or `=` in
// double quotes, so the pairs stay apart.
std::string scalar_text(const json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (!s.empty() && s.find_first_of(" \t\n\"'=") == std::string::npos)
      return terminal_text(s);
    return quoted_terminal_text(s);
  }
  return terminal_text(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

} // namespace

json payload_json(const events::payload& p) {
  json j = std::visit(payload_fields{}, p);
  return j.is_null() ? json::object() : j;
}

std::string pairs_text(const json& object) {
  std::string out;
  for (const auto& [key, v] : object.items()) {
    if (!out.empty())
      out += ' ';
    std::string k = key;
    static constexpr std::string_view suffix = "_seconds";
    if (v.is_number() && k.size() > suffix.size() &&
        k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0) {
      k.resize(k.size() - suffix.size());
      const double s = v.get<double>();
      out += k + "=" + format_duration(nanoseconds{static_cast<std::int64_t>(s * 1e9 + 0.5)});
      continue;
    }
    if (v.is_array()) {
      std::string items;
      for (const auto& x : v)
        items += (items.empty() ? "" : " ") + scalar_text(x);
      out += k + "=[" + items + "]";
    } else if (v.is_object()) {
      std::string items;
      for (const auto& [ik, iv] : v.items())
        items += (items.empty() ? "" : ",") + terminal_text(ik) + "=" + scalar_text(iv);
      out += k + "={" + items + "}";
    } else {
      out += k + "=" + scalar_text(v);
    }
  }
  return out;
}

json event_json(const api::streamed_event& s) {
  const auto& e = s.event;
  json j;
  j["time"] = format_time(e.occurred_at);
  j["sandbox_id"] = e.sandbox_id;
  j["sequence"] = e.sequence;
  j["kind"] = std::string(events::type_name(e.body));
  j["tenant"] = e.tenant;
  j["principal"] = e.principal;
  j["event_id"] = e.event_id;
  j["partition"] = s.partition;
  j["offset"] = s.offset;
  j["correlation_id"] = e.correlation_id;
  j["causation_id"] = e.causation_id;
  j["payload"] = payload_json(e.body);
  return j;
}

std::string event_line(const api::streamed_event& s) {
  const auto& e = s.event;
  std::string line = format_time_millis(e.occurred_at) + "  " + terminal_text(e.sandbox_id) + "  " +
                     std::to_string(e.sequence) + "  " + std::string(events::type_name(e.body)) +
                     "  " + terminal_text(e.principal);
  const auto essentials = pairs_text(payload_json(e.body));
  if (!essentials.empty())
    line += "  " + essentials;
  return line + "\n";
}

} // namespace sandboxd::cli
