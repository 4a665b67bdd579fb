// input_limits — how large each tenant-supplied field of a request may be, checked before
// anything is logged. Every field a tenant sends ends up in the event log (a label in the
// `created` event, an argument in `exec_started`), which lives on the node's disk outside
// every quota, so each has a size of its own and a refusal names the field, its size and its
// limit (invalid_argument). The defaults are the table in docs/api.md "Limits".
//
// Pure: the checks take plain values, so the table is unit-tested without a server.
#pragma once

#include "api/result.hpp"
#include "events/event.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::api {

struct input_limits {
  std::size_t labels = 64;                 // per sandbox
  std::size_t label_key_bytes = 128;       // each
  std::size_t label_value_bytes = 1024;    // each
  std::size_t labels_bytes = 16u << 10;    // keys and values together
  std::size_t env_vars = 256;              // per create or exec
  std::size_t env_name_bytes = 256;        // each
  std::size_t env_value_bytes = 32u << 10; // each
  std::size_t env_bytes = 128u << 10;      // names and values together
  std::size_t argv = 1024;                 // arguments of one exec
  std::size_t arg_bytes = 128u << 10;      // each (Linux's MAX_ARG_STRLEN)
  std::size_t argv_bytes = 256u << 10;     // all of them together
  std::size_t cwd_bytes = 4096;            // PATH_MAX
  std::size_t path_bytes = 4096;           // PATH_MAX
  std::size_t stdin_bytes = 1u << 20;      // given with an exec request, or one writeStdin
  std::size_t chunk_bytes = 1u << 20;      // one upload or archive write
  std::size_t client_request_id_bytes = 128;
};

// Each check answers invalid_argument naming the field, the size sent and the limit.
result<void> check_labels(const std::vector<events::label>& labels, const input_limits& l);
result<void> check_env(const std::vector<events::env_var>& env, const input_limits& l);
result<void> check_argv(const std::vector<std::string>& argv, const input_limits& l);
// `field` names it in the message ("cwd", "path", "stdin", "upload chunk", ...).
result<void> check_size(std::string_view field, std::size_t bytes, std::size_t limit);
// `count` items of `what` ("labels", "arguments", ...) against `limit`.
result<void> check_count(std::string_view what, std::size_t count, std::size_t limit);

} // namespace sandboxd::api
