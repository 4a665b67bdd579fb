// routes — what the E2B endpoint's paths do (internal to e2b/):
//
//   the sandbox API (lifecycle_routes.cpp)   /sandboxes, /v2/sandboxes and below
//   envd's processes (process_routes.cpp)     POST /process.Process/{Start,Connect,List,...}
//   envd's files (file_routes.cpp)            POST /filesystem.Filesystem/{Stat,...},
//                                             GET|POST /files, GET /health
//
// Failures travel as kj exceptions: sandboxd's own ("code: message", api::throw_error) as the
// daemon answers them, or one of Connect's codes sandboxd has no name for (throw_connect).
// Each route answers them in its API's form: {"code": 404, "message"} for the sandbox API,
// Connect's error object (or end of stream) for envd's RPCs.
#pragma once

#include "base/http_status.hpp"
#include "e2b/access_token.hpp"
#include "e2b/connect_protocol.hpp"
#include "e2b/daemon_link.hpp"
#include "e2b/http_exchange.hpp"
#include "e2b/lifecycle_json.hpp"
#include "e2b/process_table.hpp"

#include <memory>
#include <string>

namespace sandboxd::e2b {

struct route_context {
  daemon_link& link;
  process_table& processes;
  const token_sealer& sealer;
  const e2b_limits& limits;
};

[[noreturn]] void throw_connect(connect_code code, std::string message);
connect_error connect_failure_of(const kj::Exception& e);
error failure_of(const kj::Exception& e);

kj::Promise<void> serve_lifecycle(route_context& ctx, exchange& x);
kj::Promise<void> serve_process(route_context& ctx, exchange& x, std::string method);
kj::Promise<void> serve_filesystem(route_context& ctx, exchange& x, std::string method);
kj::Promise<void> serve_files(route_context& ctx, exchange& x);
kj::Promise<void> serve_health(route_context& ctx, exchange& x);

// Who an envd call is from: the access token opened for the sandbox the E2b-Sandbox-Id
// header names, the session of the API key inside it, and that sandbox. Fails with
// unauthenticated (no token, or one that does not open for that sandbox).
struct envd_caller {
  std::shared_ptr<daemon_session> session;
  rpc::Sandbox::Client sandbox = nullptr;
  std::string sandbox_id;
  std::string sandbox_key; // tenant/sandbox id: the process table's key
};
kj::Promise<envd_caller> envd_caller_of(route_context& ctx, exchange& x);

// The 502 E2B's sandbox proxy answers for a sandbox that is not (or no longer) there; the
// SDKs read "was not found" in it as "the sandbox is not running".
std::string sandbox_gone_json(const std::string& sandbox_id);

// A sandbox id as it can appear: 1-128 of letters, digits, '-', '_' and '.'. Anything else
// is a sandbox that does not exist (never looked up).
bool plausible_sandbox_id(std::string_view id);

// A path in the sandbox: absolute as given, relative ones from "/" (the working directory
// commands start in), so that files.write("a.txt") and commands.run("cat a.txt") agree.
std::string sandbox_path(std::string_view path);

} // namespace sandboxd::e2b
