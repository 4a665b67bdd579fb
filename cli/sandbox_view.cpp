#include "cli/sandbox_view.hpp"

#include "cli/duration_arg.hpp"
#include "cli/table.hpp"
#include "cli/time_arg.hpp"

namespace sandboxd::cli {
namespace {

using std::chrono::nanoseconds;

json limits_json(const events::sandbox_limits& l) {
  return json{{"memory_mib", l.memory_mib},
              {"cpu_millicores", l.cpu_millicores},
              {"pids", l.pids},
              {"disk_mib", l.disk_mib}};
}

json labels_json(const std::vector<events::label>& labels) {
  json j = json::object();
  for (const auto& l : labels)
    j[l.key] = l.value;
  return j;
}

bool holds_pause(const std::string& state) {
  return state == "pausing" || state == "paused" || state == "resuming";
}

time_point at(std::int64_t ns) {
  return time_point{nanoseconds{ns}};
}

std::string off_or(std::int64_t ns) {
  return ns == 0 ? "off" : format_duration(nanoseconds{ns});
}

} // namespace

std::string labels_text(const std::vector<events::label>& labels) {
  std::string out;
  for (const auto& l : labels)
    out += (out.empty() ? "" : ",") + l.key + "=" + l.value;
  return out.empty() ? "-" : out;
}

std::string cpus_text(std::uint32_t millicores) {
  std::string s = std::to_string(millicores / 1000);
  if (const auto frac = millicores % 1000) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03u", frac);
    std::string f(buf);
    while (f.back() == '0')
      f.pop_back();
    s += f;
  }
  return s;
}

json sandbox_json(const api::sandbox_info& s) {
  json j;
  j["id"] = s.id;
  j["state"] = s.state;
  j["template"] = s.template_name;
  j["runtime"] = s.runtime;
  j["tenant"] = s.tenant;
  j["limits"] = limits_json(s.limits);
  j["labels"] = labels_json(s.labels);
  j["created_at"] = format_time(at(s.created_at_ns));
  j["end_time"] = s.end_time_ns == 0 ? json(nullptr) : json(format_time(at(s.end_time_ns)));
  j["pause_mode"] = holds_pause(s.state) ? json(events::to_string(s.pause_mode)) : json(nullptr);
  j["idle_timeout_seconds"] = seconds_json(nanoseconds{s.idle_timeout_ns});
  j["lifetime_seconds"] = seconds_json(nanoseconds{s.lifetime_ns});
  j["paused_retention_seconds"] = seconds_json(nanoseconds{s.paused_retention_ns});
  j["on_timeout"] = s.on_timeout;
  if (s.from_pool)
    j["from_pool"] = true; // a create served from a warm pool
  j["writable_bytes"] = s.writable_bytes;
  j["failure"] = s.failure.empty() ? json(nullptr) : json(s.failure);
  j["sequence"] = s.sequence;
  return j;
}

std::string sandbox_text(const api::sandbox_info& s, events::time_point now) {
  std::string state = s.state;
  if (holds_pause(s.state))
    state += " (" + events::to_string(s.pause_mode) + ")";
  std::string end = "none";
  if (s.end_time_ns != 0) {
    const auto left = at(s.end_time_ns) - now;
    end = format_time_seconds(at(s.end_time_ns)) +
          (left.count() > 0
             ? " (in " + format_duration(std::chrono::floor<std::chrono::seconds>(left)) + ")"
             : " (passed)");
  }
  std::vector<std::pair<std::string, std::string>> f{
    {"id", s.id},
    {"state", state},
    {"template", s.template_name},
    {"runtime", s.runtime},
    {"tenant", s.tenant},
    {"memory", std::to_string(s.limits.memory_mib) + " MiB"},
    {"cpus", cpus_text(s.limits.cpu_millicores)},
    {"pids", std::to_string(s.limits.pids)},
    {"disk", s.limits.disk_mib == 0 ? "no limit" : std::to_string(s.limits.disk_mib) + " MiB"},
    {"labels", labels_text(s.labels)},
    {"created", format_time_seconds(at(s.created_at_ns))},
    {"end time", end},
    {"idle timeout", off_or(s.idle_timeout_ns)},
    {"lifetime", off_or(s.lifetime_ns)},
    {"paused retention", off_or(s.paused_retention_ns)},
    {"on timeout", s.on_timeout},
    {"writable layer", human_bytes(s.writable_bytes)},
  };
  if (!s.failure.empty())
    f.emplace_back("failure", s.failure);
  f.emplace_back("sequence", std::to_string(s.sequence));
  return render_fields(f);
}

json sandbox_row_json(const api::sandbox_summary& s) {
  json j;
  j["id"] = s.id;
  j["state"] = s.state;
  j["template"] = s.template_name;
  j["limits"] = limits_json(s.limits);
  j["labels"] = labels_json(s.labels);
  j["pause_mode"] = s.pause_mode.empty() ? json(nullptr) : json(s.pause_mode);
  j["writable_bytes"] = s.writable_bytes;
  j["created_at"] = format_time(at(s.created_at_ns));
  j["updated_at"] = format_time(at(s.updated_at_ns));
  j["sequence"] = s.sequence;
  return j;
}

std::string sandbox_table(const std::vector<api::sandbox_summary>& rows) {
  std::vector<row> cells;
  for (const auto& s : rows)
    cells.push_back({s.id, s.pause_mode.empty() ? s.state : s.state + " (" + s.pause_mode + ")",
                     s.template_name, std::to_string(s.limits.memory_mib) + " MiB",
                     cpus_text(s.limits.cpu_millicores), human_bytes(s.writable_bytes),
                     labels_text(s.labels), format_time_seconds(at(s.created_at_ns))});
  return render_table({"ID", "STATE", "TEMPLATE", "MEMORY", "CPUS", "LAYER", "LABELS", "CREATED"},
                      cells);
}

} // namespace sandboxd::cli
