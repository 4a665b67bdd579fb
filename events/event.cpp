// event.cpp — names of the event enums and payload types.
#include "events/event.hpp"

#include <array>

namespace sandboxd::events {

namespace {

// The name of an open enum's value: its entry in `names`, or "<type>(<n>)" for a value a
// newer version wrote.
template <class Enum, std::size_t N>
std::string name_of(Enum v, const std::array<std::string_view, N>& names, std::string_view type) {
  auto n = static_cast<std::size_t>(v);
  if (n < N)
    return std::string(names[n]);
  return std::string(type) + "(" + std::to_string(n) + ")";
}

} // namespace

std::string to_string(pause_mode v) {
  static constexpr std::array<std::string_view, 2> names{"filesystem", "memory"};
  return name_of(v, names, "pause_mode");
}

std::string to_string(pause_reason v) {
  static constexpr std::array<std::string_view, 3> names{"user", "idle_timeout", "recovery"};
  return name_of(v, names, "pause_reason");
}

std::string to_string(delete_reason v) {
  static constexpr std::array<std::string_view, 4> names{"user", "lifetime", "retention",
                                                         "idle_timeout"};
  return name_of(v, names, "delete_reason");
}

std::string to_string(idle_action v) {
  static constexpr std::array<std::string_view, 2> names{"pause", "delete"};
  return name_of(v, names, "idle_action");
}

std::string to_string(runtime_kind v) {
  static constexpr std::array<std::string_view, 3> names{"runsc", "crun", "hollow"};
  return name_of(v, names, "runtime_kind");
}

std::string to_string(network_mode v) {
  static constexpr std::array<std::string_view, 3> names{"none", "full", "allow_list"};
  return name_of(v, names, "network_mode");
}

std::string to_string(runtime_step v) {
  static constexpr std::array<std::string_view, 6> names{"creating", "pausing", "resuming",
                                                         "deleting", "running", "claiming"};
  return name_of(v, names, "runtime_step");
}

std::string to_string(command_kind v) {
  static constexpr std::array<std::string_view, 33> names{
    "create_sandbox",  "pause_sandbox",   "resume_sandbox",  "delete_sandbox",  "exec",
    "read_file",       "write_file",      "set_timeout",     "snapshot",        "runtime_started",
    "runtime_paused",  "runtime_resumed", "runtime_deleted", "runtime_failed",  "exec_finished",
    "storage_sampled", "idle_timer",      "lifetime_timer",  "retention_timer", "make_dir",
    "remove_path",     "rename_path",     "list_dir",        "stat_path",       "kill_exec",
    "timeout_timer",   "redact_sandbox",  "set_network",     "open_connection", "close_connection",
    "claim_sandbox",   "runtime_claimed", "delete_snapshot"};
  return name_of(v, names, "command_kind");
}

std::string to_string(op_outcome v) {
  static constexpr std::array<std::string_view, 3> names{"completed", "failed", "interrupted"};
  return name_of(v, names, "op_outcome");
}

std::string to_string(file_op_kind v) {
  static constexpr std::array<std::string_view, 5> names{"write", "make_dir", "remove", "rename",
                                                         "snapshot"};
  return name_of(v, names, "file_op_kind");
}

std::string to_string(file_read_kind v) {
  static constexpr std::array<std::string_view, 3> names{"read", "list", "stat"};
  return name_of(v, names, "file_read_kind");
}

std::string to_string(net_protocol v) {
  static constexpr std::array<std::string_view, 3> names{"tcp", "udp", "dns"};
  return name_of(v, names, "net_protocol");
}

std::string to_string(name_source v) {
  static constexpr std::array<std::string_view, 5> names{"none", "tls_sni", "http_host", "connect",
                                                         "dns_question"};
  return name_of(v, names, "name_source");
}

std::string to_string(template_scope v) {
  static constexpr std::array<std::string_view, 2> names{"global", "tenant"};
  return name_of(v, names, "template_scope");
}

std::string to_string(template_source v) {
  static constexpr std::array<std::string_view, 3> names{"stock", "import", "spec"};
  return name_of(v, names, "template_source");
}

std::string_view change_name(const template_change& c) {
  static constexpr std::array<std::string_view, std::variant_size_v<template_change>> names{
    "unknown",       "created", "layer_added", "step_started",
    "step_finished", "ready",   "failed",      "deleted"};
  return names[c.index()];
}

namespace {

// Indexed by payload::index(); kept in the order of the variant (unknown first, then the
// schema's union order).
constexpr std::array<std::string_view, std::variant_size_v<payload>> k_payload_names{
  "unknown",
  "created",
  "started",
  "pause_requested",
  "paused",
  "resume_requested",
  "resumed",
  "delete_requested",
  "deleted",
  "failed",
  "exec_started",
  "exec_finished",
  "file_written",
  "file_read",
  "storage_sampled",
  "snapshot_taken",
  "timeout_changed",
  "command_rejected",
  "file_op_requested",
  "file_op_finished",
  "exec_kill_requested",
  "redacted",
  "network_changed",
  "connection_opened",
  "connection_denied",
  "connection_closed",
  "template_event",
  "claim_requested",
  "claimed",
  "snapshot_requested",
  "snapshot_deleted"};

} // namespace

std::string_view type_name(const payload& p) {
  return k_payload_names[p.index()];
}

const std::vector<std::string_view>& payload_type_names() {
  static const std::vector<std::string_view> names(k_payload_names.begin() + 1,
                                                   k_payload_names.end());
  return names;
}

} // namespace sandboxd::events
