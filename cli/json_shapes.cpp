#include "cli/json_shapes.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>

namespace sandboxd::cli {
namespace {

using json = nlohmann::json;

json_field f(std::string name, std::string type, std::string what) {
  return {std::move(name), std::move(type), false, std::move(what)};
}
// A field that may be absent.
json_field opt(std::string name, std::string type, std::string what) {
  return {std::move(name), std::move(type), true, std::move(what)};
}

std::vector<json_field> file_fields() {
  return {f("path", "string", "the path in the sandbox"),
          f("type", "string", "regular, directory, symlink or other"),
          f("size", "integer", "bytes"), f("mode", "string", "permission bits in octal (`0644`)"),
          f("mtime", "time", "last modification")};
}
std::vector<json_field> with(std::vector<json_field> fields, std::vector<json_field> more) {
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

std::vector<json_field> exec_result_fields() {
  return {f("exec_id", "string", "the exec's id"),
          f("exit_code", "integer", "the command's exit code; 128 + N when signal N ended it"),
          f("signal", "integer", "the signal that ended it, 0 when none"),
          f("timed_out", "boolean", "its --timeout ended it"),
          f("oom_killed", "boolean", "the sandbox's memory limit ended it"),
          f("output_truncated", "boolean", "output past the daemon's limit was dropped"),
          f("interrupted", "boolean", "sandboxd restarted meanwhile, so the outcome is unknown"),
          f("duration_seconds", "number", "how long it ran"),
          f("stdout_bytes", "integer", "bytes it wrote to stdout"),
          f("stderr_bytes", "integer", "bytes it wrote to stderr")};
}

// A finished exec with its output (exec, run).
std::vector<json_field> exec_output_fields() {
  return with(exec_result_fields(),
              {opt("stdout", "string", "its stdout, when that is UTF-8"),
               opt("stdout_base64", "string", "its stdout in base64, when that is not UTF-8"),
               opt("stderr", "string", "its stderr, when that is UTF-8"),
               opt("stderr_base64", "string", "its stderr in base64, when that is not UTF-8")});
}

const std::vector<json_shape> k_shapes = {
  {"sandbox",
   "one sandbox, as the sandbox's actor knows it",
   {f("id", "string", "the sandbox's id"),
    f("state", "string",
      "creating, running, pausing, paused, resuming, deleting, deleted or failed"),
    f("template", "string", "the template its root file system comes from"),
    f("runtime", "string", "runsc or crun"), f("tenant", "string", "the tenant it belongs to"),
    f("limits", "<limits>", "its resource limits"), f("labels", "object", "label keys to values"),
    f("created_at", "time", "when it was created"),
    f("end_time", "time|null", "when its lifetime or timeout ends it; null when nothing will"),
    f("pause_mode", "string|null", "filesystem or memory while it is paused; null otherwise"),
    f("idle_timeout_seconds", "number", "idle time before on_timeout acts; 0 = off"),
    f("lifetime_seconds", "number", "the longest it lives; 0 = no limit"),
    f("paused_retention_seconds", "number", "how long it is kept paused; 0 = no limit"),
    f("on_timeout", "string", "delete, pause:filesystem or pause:memory"),
    f("writable_bytes", "integer", "bytes its writable layer holds"),
    f("failure", "string|null", "why it failed; null unless failed"),
    f("sequence", "integer", "the sequence number of its last event"),
    opt("from_pool", "boolean", "create only: true when a warm pool served it (docs/pools.md)")}},
  {"limits",
   "a sandbox's resource limits",
   {f("memory_mib", "integer", "memory in MiB"),
    f("cpu_millicores", "integer", "CPU in thousandths of a core"),
    f("pids", "integer", "processes and threads at once"),
    f("disk_mib", "integer", "its writable layer's quota in MiB")}},
  {"sandbox_list",
   "a page of sandboxes from the read model",
   {f("sandboxes", "[<sandbox_row>]", "newest first"),
    f("next_page_token", "string", "pass to --page-token for the next page; empty on the last")}},
  {"sandbox_row",
   "one sandbox as the read model lists it",
   {f("id", "string", "the sandbox's id"), f("state", "string", "as in `sandbox`"),
    f("template", "string", "its template"), f("limits", "<limits>", "its resource limits"),
    f("labels", "object", "label keys to values"),
    f("pause_mode", "string|null", "filesystem or memory while paused; null otherwise"),
    f("writable_bytes", "integer", "bytes its writable layer holds"),
    f("created_at", "time", "when it was created"), f("updated_at", "time", "its last change"),
    f("sequence", "integer", "the sequence number of the last event the row shows")}},
  {"deleted",
   "a deleted sandbox",
   {f("id", "string", "its id"), f("state", "string", "`deleted`")}},
  {"redacted",
   "a redacted sandbox",
   {f("id", "string", "its id"), f("redacted", "boolean", "always true")}},
  {"exec_output", "a finished exec and its output", exec_output_fields()},
  {"code_output", "code run in a language and its output",
   with(exec_output_fields(),
        {f("language", "string", "the language (python, node, bash, sh)"),
         opt("output", "string", "stdout and stderr in the order they came, when that is UTF-8"),
         opt("output_base64", "string", "the same in base64, when that is not UTF-8")})},
  {"exec_result", "a finished exec", exec_result_fields()},
  {"exec_started",
   "an exec in flight",
   {f("exec_id", "string", "the exec's id (for ps, wait and kill)"),
    f("argv", "[string]", "the command and its arguments"),
    f("started_at", "time", "when it started")}},
  {"exec_list", "the execs in flight", {f("execs", "[<exec_started>]", "oldest first")}},
  {"signal_sent",
   "a signal sent to an exec",
   {f("exec_id", "string", "the exec's id"), f("signal", "integer", "the signal's number")}},
  {"file", "a file's metadata", file_fields()},
  {"file_written", "a file written",
   with(file_fields(), {f("sha256", "string", "the SHA-256 of its content, in hex")})},
  {"file_content", "a file and its content",
   with(file_fields(),
        {f("sha256", "string", "the SHA-256 of its content, in hex"),
         opt("content", "string", "the content, when it is UTF-8"),
         opt("content_base64", "string", "the content in base64, when it is not UTF-8")})},
  {"file_copied_out", "a file copied out of a sandbox",
   with(file_fields(), {f("sha256", "string", "the SHA-256 of its content, in hex"),
                        f("local", "string", "the local file written")})},
  {"listing",
   "a directory's entries",
   {f("path", "string", "the directory"), f("entries", "[<entry>]", "sorted by name"),
    f("truncated", "boolean", "the directory has more entries than the daemon returns")}},
  {"entry", "one directory entry",
   with({f("name", "string", "its name in the directory")}, file_fields())},
  {"created", "a directory made", {f("created", "string", "its path")}},
  {"removed", "a path removed", {f("removed", "string", "its path")}},
  {"moved",
   "a path renamed",
   {f("from", "string", "the old path"), f("to", "string", "the new path")}},
  {"event",
   "one event of the log (docs/event-format.md)",
   {f("time", "time", "when it happened"), f("sandbox_id", "string", "the sandbox it belongs to"),
    f("sequence", "integer", "its place in the sandbox's history, from 1"),
    f("kind", "string", "created, started, exec_started, ... (docs/event-format.md)"),
    f("tenant", "string", "the sandbox's tenant"), f("principal", "string", "who caused it"),
    f("event_id", "string", "its unique id"),
    f("partition", "integer", "the log partition holding it"),
    f("offset", "integer", "its offset in that partition"),
    f("correlation_id", "string", "the request it belongs to"),
    f("causation_id", "string", "the event or command that caused it"),
    f("payload", "object", "the kind's own fields")}},
  {"bill",
   "a bill for a period",
   {f("tenant", "string", "the tenant billed (empty: the caller's)"),
    f("from", "time", "the period's start, widened to a whole hour"),
    f("to", "time", "the period's end, widened to a whole hour"),
    f("by", "string", "sandbox, hour or day"),
    f("lines", "[<bill_line>]", "one per sandbox, hour or day"),
    f("total_compute_micros", "integer", "compute, in micro-dollars"),
    f("total_storage_micros", "integer", "storage, in micro-dollars"),
    f("total_micros", "integer", "the total, in micro-dollars"),
    f("total_usd", "string", "the total in dollars, six decimals")}},
  {"bill_line",
   "one line of a bill",
   {f("tenant", "string", "the tenant"), f("sandbox_id", "string", "the sandbox (--by sandbox)"),
    f("from", "time", "the line's start"), f("to", "time", "the line's end"),
    f("compute_gib_seconds", "number", "memory GiB times seconds running"),
    f("storage_gib_seconds", "number", "writable-layer GiB times seconds kept"),
    f("compute_micros", "integer", "compute, in micro-dollars"),
    f("storage_micros", "integer", "storage, in micro-dollars"),
    f("total_micros", "integer", "the line's total, in micro-dollars"),
    f("compute_usd", "string", "compute in dollars"),
    f("storage_usd", "string", "storage in dollars"),
    f("total_usd", "string", "the line's total in dollars"),
    f("events", "[string]", "the ids of the events the line is computed from")}},
  {"audit_page",
   "a page of the audit log",
   {f("rows", "[<audit_row>]", "oldest first"),
    f("next_page_token", "string", "pass to --page-token for the next page; empty on the last")}},
  {"audit_row",
   "one audit row (docs/audit-log.md)",
   {f("tenant", "string", "the tenant whose chain holds it"),
    f("partition", "integer", "the log partition of its event"),
    f("position", "integer", "its place in the chain"),
    f("event_id", "string", "the event it records"), f("sandbox_id", "string", "the sandbox"),
    f("time", "time", "when it happened"), f("principal", "string", "who did it"),
    f("action", "string", "what was done"),
    f("outcome", "string", "accepted, the error code of a rejected operation, or unknown"),
    f("detail", "string", "what the action was about (empty once redacted)"),
    f("redacted", "boolean", "its detail was removed by `redact`"),
    f("hash", "string", "the row's link in the chain, in hex")}},
  {"audit_check",
   "the audit chain's verification",
   {f("ok", "boolean", "the chain holds"), f("checked_rows", "integer", "rows checked"),
    f("problems", "[<audit_problem>]", "the first problem of each broken chain")}},
  {"audit_problem",
   "a place where the chain breaks",
   {f("tenant", "string", "the chain's tenant"), f("partition", "integer", "the row's partition"),
    f("position", "integer", "the row's position"), f("event_id", "string", "the row's event"),
    f("kind", "string",
      "hash_mismatch, broken_link, out_of_order, missing_row, truncated_tail, beyond_head or "
      "bad_redaction (docs/audit-log.md)"),
    f("message", "string", "what is wrong, for people")}},
  {"replay_step",
   "one event and the sandbox's state after it",
   {f("event", "<event>", "the event"),
    f("state", "object", "the state's fields after it (docs/replay.md)")}},
  {"state_diff",
   "how a sandbox's state changed between two sequence numbers",
   {f("from_seq", "integer", "the earlier sequence number"),
    f("to_seq", "integer", "the later one"),
    f("changes", "[<field_change>]", "the fields that differ"),
    f("events", "[<event>]", "the events between them")}},
  {"field_change",
   "one changed state field",
   {f("field", "string", "its name"), f("before", "any", "its value before (null: absent)"),
    f("after", "any", "its value after (null: absent)")}},
  {"projection_status",
   "how far each projector is",
   {f("partitions", "[<projection_partition>]", "one per projection and partition")}},
  {"projection_partition",
   "one projection on one partition",
   {f("projection", "string", "the projection"), f("partition", "integer", "the partition"),
    f("offset", "integer", "the next offset it will project"),
    f("end_offset", "integer", "the partition's end"),
    f("lag_events", "integer", "events not yet projected"),
    f("lag_seconds", "number", "how old the oldest of them is")}},
  {"projection_check",
   "a read model compared with one rebuilt from the log",
   {f("name", "string", "the read model"), f("equal", "boolean", "no difference"),
    f("rows_compared", "integer", "rows compared"),
    f("offsets", "object", "partition to the offset both were compared at"),
    f("differences", "[<projection_difference>]", "rows that differ")}},
  {"projection_difference",
   "a row that differs",
   {f("table", "string", "the table"),
    f("side", "string", "live or rebuild: the side that has the row"),
    f("row", "object|null", "the row"), f("events", "[string]", "the events that made it")}},
  {"projection_rebuild",
   "a read model rebuilt",
   {f("name", "string", "the read model"), f("rows_replaced", "integer", "rows written"),
    f("offsets", "object", "partition to the offset it was rebuilt up to")}},
  {"determinism_check",
   "live sandboxes compared with their replayed state",
   {f("checked", "integer", "sandboxes compared"), f("equal", "boolean", "no difference"),
    f("differences", "[<determinism_difference>]", "fields that differ")}},
  {"determinism_difference",
   "a field that differs",
   {f("sandbox_id", "string", "the sandbox"), f("field", "string", "the state field"),
    f("live", "string", "its live value"), f("replayed", "string", "its replayed value")}},
  {"completion_script", "a completion script", {f("script", "string", "the script")}},
  {"version",
   "versions and who the token is",
   {f("sandboxctl", "string", "sandboxctl's version"),
    f("sandboxd", "string", "the daemon's version"), f("tenant", "string", "the token's tenant"),
    f("principal", "string", "the token's principal"),
    f("scopes", "[string]", "what the token may do")}},
  {"template",
   "one template (docs/templates.md)",
   {f("name", "string", "its name"),
    f("id", "string", "tpl_<16 hex digits>; empty for a stock template not built yet"),
    f("scope", "string", "global or tenant"),
    f("tenant", "string", "tenant scope: the owner; empty otherwise"),
    f("status", "string", "stock (not built yet), building, ready or failed"),
    f("source", "string", "stock, import or spec"),
    f("description", "string", "what it is made of"),
    f("digest", "string", "ready: the template digest (hex); empty otherwise"),
    f("layers", "[object]", "ready: each layer's sha256 and bytes, lowest first"),
    f("env", "object", "the environment every sandbox of it starts with"),
    f("working_directory", "string", "empty: /"), f("user", "string", "empty: root"),
    f("command", "[string]", "the default command"),
    f("total_bytes", "integer", "its layers' bytes in the layer store"),
    f("failure", "string", "failed: why"),
    f("created_at", "time|null", "when it was first made; null for one not built yet"),
    f("used_by", "[string]", "the live sandboxes that use it")}},
  {"template_list", "the templates a tenant may use", {f("templates", "[<template>]", "by name")}},
  {"template_deleted",
   "a deleted template",
   {f("name", "string", "its name"), f("id", "string", "its id"),
    f("status", "string", "always deleted")}},
  {"pool",
   "one warm pool (docs/pools.md)",
   {f("key", "string", "<template>/<runtime>/m<MiB>/c<millicores>/p<pids>/d<disk MiB>"),
    f("template", "string", "its template"),
    f("runtime", "string", "its runtime"),
    f("memory_mib", "integer", "the key's memory limit"),
    f("cpu_millicores", "integer", "the key's CPU limit"),
    f("pids", "integer", "the key's process limit"),
    f("disk_mib", "integer", "the key's writable-layer limit"),
    f("size", "integer", "ready sandboxes kept at rest"),
    f("maximum", "integer", "most it holds when demand grows"),
    f("refill_per_second", "number", "creates started per second at most"),
    f("ready", "integer", "sandboxes ready now"),
    f("making", "integer", "creates started and not answered"),
    f("target", "integer", "size plus the last 10 s of claims, at most maximum"),
    f("hits", "integer", "creates served from it"),
    f("misses", "integer", "creates it had nothing ready for"),
    f("made", "integer", "its creates that ended running"),
    f("failed", "integer", "its creates that did not"),
    f("retired", "integer", "ready sandboxes deleted unclaimed"),
    f("refill_seconds_mean", "number", "its creates, started to running, on average"),
    f("refill_seconds_max", "number", "the slowest of them"),
    f("ready_ids", "[string]", "its ready sandboxes, oldest first"),
    f("last_error", "string|null", "why its last create failed; null if none did")}},
  {"pool_list", "the node's warm pools", {f("pools", "[<pool>]", "by key")}},
  {"pool_set", "a pool started or changed", {f("set", "boolean", "always true")}},
  {"pool_removed", "a pool ended", {f("removed", "boolean", "false when there was none")}},
  {"snapshot",
   "a snapshot of a sandbox's writable layer (docs/snapshots.md)",
   {f("id", "string", "snap- and 16 hex digits"), f("name", "string", "as given; \"\" for none"),
    f("sandbox_id", "string", "the sandbox it was taken of"),
    f("taken_at_ns", "integer", "when, in nanoseconds since the epoch"),
    f("template", "string", "the sandbox's template: a fork's"),
    f("runtime", "string", "the sandbox's runtime: a fork's"),
    f("layer_bytes", "integer", "the sandbox's writable layer when it was taken"),
    f("referenced_bytes", "integer", "every block the snapshot reaches (btrfs qgroup)"),
    f("exclusive_bytes", "integer", "the blocks only it holds: what deleting it frees"),
    f("sequence", "integer", "of its snapshot_taken event in the sandbox's stream")}},
  {"snapshot_list", "a tenant's snapshots", {f("snapshots", "[<snapshot>]", "oldest first")}},
  {"snapshot_deleted", "a deleted snapshot", {f("deleted", "string", "its id")}},
  {"error_document",
   "what every command prints when it fails",
   {f("error", "<error>", "the error")}},
  {"error",
   "an error",
   {f("code", "string", "not_found, conflict, ... (the exit code table)"),
    f("message", "string", "what happened and what to do"),
    f("exit_code", "integer", "sandboxctl's exit code")}},
};

const std::vector<json_output> k_outputs = {
  {"create", "sandbox"},
  {"get", "sandbox"},
  {"list", "sandbox_list"},
  {"set-timeout", "sandbox"},
  {"pause", "sandbox"},
  {"resume", "sandbox"},
  {"delete", "deleted"},
  {"redact", "redacted"},
  {"exec", "exec_output"},
  {"exec --background", "exec_started"},
  {"run", "code_output"},
  {"ps", "exec_list"},
  {"kill", "signal_sent"},
  {"wait", "exec_result"},
  {"write", "file_written"},
  {"read", "file_content"},
  {"ls", "listing"},
  {"stat", "file"},
  {"mkdir", "created"},
  {"rm", "removed"},
  {"mv", "moved"},
  {"cp-in", "file_written"},
  {"cp-out", "file_copied_out"},
  {"template list", "template_list"},
  {"template show", "template"},
  {"template build", "template"},
  {"template import", "template"},
  {"template rm", "template_deleted"},
  {"snapshot create", "snapshot"},
  {"snapshot list", "snapshot_list"},
  {"snapshot show", "snapshot"},
  {"snapshot rm", "snapshot_deleted"},
  {"fork", "sandbox"},
  {"events", "event", true},
  {"watch", "event", true},
  {"bill", "bill"},
  {"audit", "audit_page"},
  {"audit verify", "audit_check"},
  {"replay", "replay_step", true},
  {"diff", "state_diff"},
  {"projections status", "projection_status"},
  {"projections rebuild", "projection_rebuild"},
  {"projections verify", "projection_check"},
  {"check determinism", "determinism_check"},
  {"pool list", "pool_list"},
  {"pool set", "pool_set"},
  {"pool rm", "pool_removed"},
  {"completion bash", "completion_script"},
  {"completion zsh", "completion_script"},
  {"version", "version"},
};

const json_shape* shape_named(const std::string& name) {
  auto it = std::find_if(k_shapes.begin(), k_shapes.end(),
                         [&](const json_shape& s) { return s.name == name; });
  return it == k_shapes.end() ? nullptr : &*it;
}

bool is_time(const json& v) {
  static const std::regex rfc3339(
    R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}))");
  return v.is_string() && std::regex_match(v.get<std::string>(), rfc3339);
}

void check(const json& v, std::string type, const std::string& where,
           std::vector<std::string>& problems);

void check_shape(const json& doc, const std::string& name, const std::string& where,
                 std::vector<std::string>& problems) {
  const json_shape* s = shape_named(name);
  if (s == nullptr) {
    problems.push_back(where + ": no shape named " + name);
    return;
  }
  if (!doc.is_object()) {
    problems.push_back(where + ": not an object (" + name + ")");
    return;
  }
  for (const auto& field : s->fields) {
    const std::string at = where.empty() ? field.name : where + "." + field.name;
    if (!doc.contains(field.name)) {
      if (!field.optional)
        problems.push_back(at + ": missing");
      continue;
    }
    check(doc.at(field.name), field.type, at, problems);
  }
  for (const auto& [key, value] : doc.items()) {
    (void)value;
    if (std::none_of(s->fields.begin(), s->fields.end(),
                     [&](const json_field& x) { return x.name == key; }))
      problems.push_back((where.empty() ? key : where + "." + key) + ": not documented in " + name);
  }
}

void check(const json& v, std::string type, const std::string& where,
           std::vector<std::string>& problems) {
  if (const auto bar = type.find("|null"); bar != std::string::npos) {
    if (v.is_null())
      return;
    type = type.substr(0, bar);
  }
  bool ok = true;
  if (type == "any")
    ok = true;
  else if (type == "string")
    ok = v.is_string();
  else if (type == "integer")
    ok = v.is_number_integer();
  else if (type == "number")
    ok = v.is_number();
  else if (type == "boolean")
    ok = v.is_boolean();
  else if (type == "time")
    ok = is_time(v);
  else if (type == "object")
    ok = v.is_object();
  else if (type.size() > 2 && type.front() == '[' && type.back() == ']') {
    if (!v.is_array()) {
      ok = false;
    } else {
      const std::string inner = type.substr(1, type.size() - 2);
      for (std::size_t i = 0; i < v.size(); ++i)
        check(v[i], inner, where + "[" + std::to_string(i) + "]", problems);
    }
  } else if (type.size() > 2 && type.front() == '<' && type.back() == '>') {
    check_shape(v, type.substr(1, type.size() - 2), where, problems);
  } else {
    problems.push_back(where + ": unknown type " + type);
  }
  if (!ok)
    problems.push_back(where + ": expected " + type + ", got " + v.dump());
}

std::string cell(std::string s) {
  std::string out;
  for (char c : s)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

} // namespace

const std::vector<json_shape>& json_shapes() {
  return k_shapes;
}
const std::vector<json_output>& json_outputs() {
  return k_outputs;
}

const json_output* json_output_of(const std::string& command) {
  auto it = std::find_if(k_outputs.begin(), k_outputs.end(),
                         [&](const json_output& o) { return o.command == command; });
  return it == k_outputs.end() ? nullptr : &*it;
}

std::vector<std::string> shape_problems(const nlohmann::json& doc, const std::string& shape) {
  std::vector<std::string> problems;
  check_shape(doc, shape, "", problems);
  return problems;
}

std::string json_shapes_markdown() {
  std::string out =
    "## JSON output\n\n"
    "What each command prints with `--json`; every field is always present unless marked "
    "(optional). Types: `time` is an RFC 3339 string in UTC, `object` a JSON object whose keys "
    "vary, `<shape>` an object of that shape, `[...]` an array. A failed command prints an "
    "`error_document` instead.\n\n"
    "| command | prints |\n| --- | --- |\n";
  for (const auto& o : k_outputs)
    out += "| `" + o.command + "` | " + (o.lines ? "JSON lines, one `" : "one `") + o.shape + "`" +
           (o.lines ? " per line" : "") + " |\n";
  for (const auto& s : k_shapes) {
    out += "\n### " + s.name + "\n\n" + s.what +
           ".\n\n| field | type | what |\n| --- | --- | "
           "--- |\n";
    for (const auto& x : s.fields)
      out += "| `" + x.name + "` | `" + cell(x.type) + "` | " + cell(x.what) +
             (x.optional ? " (optional)" : "") + " |\n";
  }
  return out;
}

} // namespace sandboxd::cli
