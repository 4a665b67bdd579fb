// lifecycle_json — the JSON of E2B's sandbox API (api.e2b.app, the `e2b` SDKs' generated
// clients): the create request read into a plain struct, and the sandbox objects written
// from one. sandboxd's names for E2B's: a sandbox's metadata are its labels, its template
// name is a sandboxd template, its timeout is its end time, and autoPause is an auto-pause
// in memory (autoPauseMemory false: filesystem) when that time comes.
//
//   POST /v2/sandboxes (and /sandboxes)   NewSandbox -> 201 Sandbox
//   GET  /sandboxes/ID                    -> 200 SandboxDetail
//   GET  /v2/sandboxes?metadata=&state=   -> 200 [ListedSandbox], X-Next-Token
//   POST /v2/sandboxes/ID/connect         {timeout, memory} -> 200/201 Sandbox
//   errors                                {"code": 404, "message": "..."}
#pragma once

#include "base/result.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::e2b {

// What E2B sandboxes get when a create names no timeout: 300 s.
inline constexpr std::int64_t k_default_timeout_s = 300;

struct new_sandbox {
  std::string template_name;                    // templateID
  std::int64_t timeout_s = k_default_timeout_s; // from now; 0 would end it at once: refused
  std::vector<events::label> metadata;
  std::vector<std::pair<std::string, std::string>> env; // envVars
  bool auto_pause = false;
  bool auto_pause_memory = true;
  std::optional<bool> allow_internet_access;
};

// invalid_argument naming the field for a malformed request, and for what sandboxd does not
// do (docs/e2b.md): network rules, MCP, volume mounts, workload identity, auto-resume.
result<new_sandbox> parse_new_sandbox(std::string_view body);

// {timeout} of POST /sandboxes/ID/timeout; {timeout, memory} of connect; {memory} of pause.
struct timeout_body {
  std::optional<std::int64_t> timeout_s;
  std::optional<bool> memory;
};
result<timeout_body> parse_timeout_body(std::string_view body, bool timeout_required);

// A sandbox as E2B's API shows it, from sandboxd's SandboxInfo (or a list row).
struct sandbox_view {
  std::string id;
  std::string template_name;
  bool paused = false; // E2B knows running and paused: pausing counts as paused, the rest running
  std::int64_t started_ns = 0;
  std::int64_t end_ns = 0; // 0: no end time (shown as started + 100 years)
  std::uint32_t memory_mib = 0;
  std::uint32_t cpu_millicores = 0;
  std::uint64_t disk_mib = 0;
  std::vector<events::label> metadata;
  bool on_timeout_pause = false;
  bool internet = false;
  std::string envd_access_token; // "" when not shown
};

// The envd version sandboxd's endpoint answers as: the one whose features it serves (the
// SDKs gate stdin, closeStdin and octet-stream uploads on it, and refuse file metadata below
// 0.6.2, which sandboxd does not keep).
inline constexpr std::string_view k_envd_version = "0.5.7";

std::string sandbox_json(const sandbox_view& s);        // Sandbox (create, connect)
std::string sandbox_detail_json(const sandbox_view& s); // SandboxDetail (get)
std::string listed_sandboxes_json(const std::vector<sandbox_view>& rows);

// {"code": status, "message": message}: every error of the API (its status:
// base/http_status.hpp's for the code).
std::string api_error_json(int status, std::string_view message);

// The list's filters from its query: `metadata` is a query string of its own
// ("k1=v1&k2=v2", keys and values percent-encoded once more), `state` a comma list of
// running and paused (empty: both).
struct list_query {
  std::vector<events::label> metadata;
  bool running = true;
  bool paused = true;
};
result<list_query> parse_list_query(std::string_view metadata, std::string_view state);

// %XX and '+' decoded; invalid_argument for a malformed escape.
result<std::string> percent_decode(std::string_view text, bool plus_is_space);
// The pairs of a query string "a=1&b=2", each name and value decoded.
result<std::vector<std::pair<std::string, std::string>>> parse_query(std::string_view query);

} // namespace sandboxd::e2b
