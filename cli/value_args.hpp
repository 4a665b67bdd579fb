// value_args — the small values sandboxctl's flags take, parsed into what the client sends:
// KEY=VALUE pairs (labels, environment), signals, permission bits, log positions, CPUs.
// Every "no" is invalid_argument with a message that names the text and shows a good form.
#pragma once

#include "base/result.hpp"
#include "events/event.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::cli {

// "key=value": the key is what comes before the first '=' and must not be empty; the value
// may be empty and may hold '='. `what` names the flag in messages ("--label").
result<std::pair<std::string, std::string>> parse_pair(std::string_view text,
                                                       std::string_view what);

// "TERM", "SIGTERM", "term", "15": the signal's number. 0 is refused (it kills nothing).
result<int> parse_signal(std::string_view text);
// "SIGKILL" for 9; "signal 64" for a number without a name here.
std::string signal_name(int signal);

// Octal permission bits: "644", "0644", "0o644" (at most 07777).
result<std::uint32_t> parse_mode(std::string_view text);
// "rw-r--r--" (with s/t for the special bits).
std::string format_mode(std::uint32_t mode);

// "P:O": a log partition and an offset in it (both >= 0).
result<std::pair<std::int32_t, std::int64_t>> parse_partition_offset(std::string_view text);

// CPUs as a decimal ("0.5", "2") to millicores (500, 2000); at least 1 millicore.
result<std::uint32_t> parse_cpus(std::string_view text);

// --network MODE and --allow DEST...: the policy a create sends. MODE is none, allowlist or
// all ("" : allowlist when there are rules, else none); rules with mode none are refused.
// The rules go as they are: the daemon parses them (invalid_argument naming a bad one).
result<events::network_policy> network_flags(std::string_view mode,
                                             const std::vector<std::string>& allow);

// "filesystem" or "memory".
result<events::pause_mode> parse_pause_mode(std::string_view text);

} // namespace sandboxd::cli
