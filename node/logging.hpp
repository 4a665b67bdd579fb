// logging — sandboxd's log lines (spdlog, to stderr): lines a person reads, or one JSON
// object per line for a log pipeline.
//
//   text: 2026-12-01T13:44:44.123Z info  control plane: recovered 3 sandboxes in 0.02 s
//   json: {"time":"2026-12-01T13:44:44.123Z","level":"info","message":"control plane: ..."}
//
// Times are UTC with milliseconds. In JSON the message is escaped (quotes, backslashes,
// control characters as \u00XX); bytes that are not valid UTF-8 become U+FFFD, so every
// line is valid JSON whatever a message holds (paths, names from tenants).
#pragma once

#include "node/daemon_settings.hpp"

#include <string>
#include <string_view>

namespace sandboxd::node {

// Makes the default spdlog logger write to stderr in `format`, at `level` (a name that
// to_daemon_config accepted).
void configure_logging(log_format format, const std::string& level);

// The JSON line of one message (without the newline); for tests.
std::string json_log_line(std::string_view time, std::string_view level, std::string_view message);

} // namespace sandboxd::node
