#include "e2b/lifecycle_json.hpp"

#include "e2b/proto_json.hpp"

namespace sandboxd::e2b {

namespace {

// The client id E2B's objects carry (its API names the node that runs the sandbox).
constexpr std::string_view k_client_id = "sandboxd";
// "No end time" as an instant: E2B's objects always have one.
constexpr std::int64_t k_century_ns = 100LL * 365 * 24 * 3600 * 1'000'000'000LL;

error unsupported(std::string_view field, std::string_view why) {
  return make_error(errc::invalid_argument, std::string(field) +
                                              " is not supported by sandboxd's "
                                              "E2B endpoint: " +
                                              std::string(why) + " (docs/e2b.md)");
}

bool empty_value(const json* v) {
  return !v || (v->is_object() && v->empty()) || (v->is_array() && v->empty()) ||
         (v->is_boolean() && !v->get<bool>());
}

result<std::vector<std::pair<std::string, std::string>>> string_map(const json* v,
                                                                    std::string_view field) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!v)
    return out;
  if (!v->is_object())
    return make_error(errc::invalid_argument,
                      "field " + std::string(field) + " must be an object of strings");
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_string())
      return make_error(errc::invalid_argument,
                        "field " + std::string(field) + "." + it.key() + " must be a string");
    out.emplace_back(it.key(), it.value().get<std::string>());
  }
  return out;
}

std::int64_t shown_end(const sandbox_view& s) {
  return s.end_ns != 0 ? s.end_ns : s.started_ns + k_century_ns;
}

json metadata_json(const std::vector<events::label>& labels) {
  json m = json::object();
  for (const auto& l : labels)
    m[l.key] = l.value;
  return m;
}

std::uint32_t cpu_count(const sandbox_view& s) {
  return s.cpu_millicores == 0 ? 1 : (s.cpu_millicores + 999) / 1000;
}

json listed_json(const sandbox_view& s) {
  json j;
  j["templateID"] = s.template_name;
  j["alias"] = s.template_name;
  j["sandboxID"] = s.id;
  j["clientID"] = std::string(k_client_id);
  j["startedAt"] = rfc3339(s.started_ns);
  j["endAt"] = rfc3339(shown_end(s));
  j["envdVersion"] = std::string(k_envd_version);
  j["cpuCount"] = cpu_count(s);
  j["memoryMB"] = s.memory_mib;
  j["diskSizeMB"] = s.disk_mib;
  j["state"] = s.paused ? "paused" : "running";
  j["metadata"] = metadata_json(s.metadata);
  return j;
}

} // namespace

result<new_sandbox> parse_new_sandbox(std::string_view body) {
  E2B_TRY(j, parse_object(body, "the request body"));
  new_sandbox r;
  E2B_TRY(tpl, read_string(member(*j, "templateID"), "templateID"));
  r.template_name = std::move(*tpl);
  if (r.template_name.empty())
    return make_error(errc::invalid_argument,
                      "templateID is missing; name a template (sandboxctl template list)");
  if (auto* t = member(*j, "timeout")) {
    E2B_TRY(n, read_int64(t, "timeout"));
    if (*n <= 0)
      return make_error(errc::invalid_argument,
                        "timeout " + std::to_string(*n) + " s: give a number of seconds above 0");
    r.timeout_s = *n;
  }
  E2B_TRY(metadata, string_map(member(*j, "metadata"), "metadata"));
  for (auto& [k, v] : *metadata)
    r.metadata.push_back(events::label{std::move(k), std::move(v)});
  E2B_TRY(env, string_map(member(*j, "envVars"), "envVars"));
  r.env = std::move(*env);
  E2B_TRY(auto_pause, read_bool(member(*j, "autoPause"), "autoPause"));
  r.auto_pause = *auto_pause;
  if (auto* m = member(*j, "autoPauseMemory")) {
    E2B_TRY(b, read_bool(m, "autoPauseMemory"));
    r.auto_pause_memory = *b;
  }
  if (auto* a = member(*j, "allow_internet_access")) {
    E2B_TRY(b, read_bool(a, "allow_internet_access"));
    r.allow_internet_access = *b;
  }
  if (auto* resume = member(*j, "autoResume"); resume && resume->is_object()) {
    E2B_TRY(enabled, read_bool(member(*resume, "enabled"), "autoResume.enabled"));
    if (*enabled)
      return unsupported("autoResume", "a paused sandbox resumes on connect only");
  }
  if (!empty_value(member(*j, "network")))
    return unsupported("network",
                       "give allow_internet_access, or create the sandbox with sandboxctl's "
                       "--network rules");
  if (!empty_value(member(*j, "mcp")))
    return unsupported("mcp", "sandboxd runs no MCP gateway");
  if (!empty_value(member(*j, "volumeMounts")))
    return unsupported("volumeMounts", "sandboxd has no volumes");
  if (!empty_value(member(*j, "iam")))
    return unsupported("iam", "sandboxd has no workload identity");
  return r;
}

result<timeout_body> parse_timeout_body(std::string_view body, bool timeout_required) {
  timeout_body r;
  if (body.empty() && !timeout_required)
    return r;
  E2B_TRY(j, parse_object(body, "the request body"));
  if (auto* t = member(*j, "timeout")) {
    E2B_TRY(n, read_int64(t, "timeout"));
    if (*n < 0)
      return make_error(errc::invalid_argument,
                        "timeout " + std::to_string(*n) + " s: give a number of seconds");
    r.timeout_s = *n;
  } else if (timeout_required) {
    return make_error(errc::invalid_argument, "timeout is missing; give it in seconds");
  }
  if (auto* m = member(*j, "memory")) {
    E2B_TRY(b, read_bool(m, "memory"));
    r.memory = *b;
  }
  return r;
}

std::string sandbox_json(const sandbox_view& s) {
  json j;
  j["templateID"] = s.template_name;
  j["alias"] = s.template_name;
  j["sandboxID"] = s.id;
  j["clientID"] = std::string(k_client_id);
  j["envdVersion"] = std::string(k_envd_version);
  if (!s.envd_access_token.empty())
    j["envdAccessToken"] = s.envd_access_token;
  j["trafficAccessToken"] = nullptr;
  j["domain"] = nullptr;
  return dump(j);
}

std::string sandbox_detail_json(const sandbox_view& s) {
  json j = listed_json(s);
  if (!s.envd_access_token.empty())
    j["envdAccessToken"] = s.envd_access_token;
  j["allowInternetAccess"] = s.internet;
  j["domain"] = nullptr;
  json lifecycle;
  lifecycle["autoResume"] = false;
  lifecycle["onTimeout"] = s.on_timeout_pause ? "pause" : "kill";
  j["lifecycle"] = std::move(lifecycle);
  return dump(j);
}

std::string listed_sandboxes_json(const std::vector<sandbox_view>& rows) {
  json list = json::array();
  for (const auto& s : rows)
    list.push_back(listed_json(s));
  return dump(list);
}

std::string api_error_json(int status, std::string_view message) {
  json j;
  j["code"] = status;
  j["message"] = std::string(message);
  return dump(j);
}

result<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const bool whole = i + 2 < text.size();
      const int hi = whole ? hex(text[i + 1]) : -1;
      const int lo = whole ? hex(text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return make_error(errc::invalid_argument,
                          "a malformed percent escape in \"" + std::string(text) + "\"");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

result<std::vector<std::pair<std::string, std::string>>> parse_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty())
      continue;
    const auto eq = part.find('=');
    E2B_TRY(name, percent_decode(part.substr(0, eq), true));
    E2B_TRY(value,
            percent_decode(eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1),
                           true));
    out.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

result<list_query> parse_list_query(std::string_view metadata, std::string_view state) {
  list_query q;
  E2B_TRY(pairs, parse_query(metadata));
  for (auto& [k, v] : *pairs) {
    // The SDKs encode each key and value once more before they make the query string.
    E2B_TRY(key, percent_decode(k, false));
    E2B_TRY(value, percent_decode(v, false));
    q.metadata.push_back(events::label{std::move(*key), std::move(*value)});
  }
  if (!state.empty()) {
    q.running = q.paused = false;
    while (!state.empty()) {
      const auto comma = state.find(',');
      const auto s = state.substr(0, comma);
      state = comma == std::string_view::npos ? std::string_view{} : state.substr(comma + 1);
      if (s == "running")
        q.running = true;
      else if (s == "paused")
        q.paused = true;
      else
        return make_error(errc::invalid_argument,
                          "state " + std::string(s) + " is not one of running, paused");
    }
  }
  return q;
}

} // namespace sandboxd::e2b
