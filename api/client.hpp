// client.hpp — the C++ client library of sandboxd's RPC API: a small synchronous facade over
// the generated Cap'n Proto classes (schemas/api.capnp), for programs with a plain main()
// (the CLI, tests, benchmarks).
//
//   auto c = sandboxd::api::client::connect({"unix:./var/sandboxd.sock", token});
//   if (!c) { std::cerr << to_string(c.code()) << ": " << c.err().message << "\n"; return 1; }
//   auto sb = c->create({});                    // result<sandbox_info>
//   c->pause(sb->id, events::pause_mode::filesystem);
//   c->watch(sb->id, 1, [](const streamed_event& e) { ...; return true; });
//
// Every call returns result<T>: the value, or the daemon's error code and message (parsed
// from the Cap'n Proto exception, rpc_error.hpp). A lost connection is `unavailable`.
// A client runs on its thread's kj event loop (made with the thread's first client, shared by
// the thread's clients, gone with the last): use it from the thread that connected it, one
// call at a time (calls block until answered; a watch or tail runs its callback on that
// thread). A thread with a kj event loop of its own cannot also hold a client.
#pragma once

#include "api/authenticator.hpp"
#include "api/records.hpp"
#include "api/result.hpp"
#include "events/event.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::api {

struct client_options {
  client_options() = default;
  client_options(std::string address_, std::string token_)
      : address(std::move(address_)), token(std::move(token_)) {}

  std::string address; // "unix:PATH" or "tcp:HOST:PORT"
  std::string token;
  // TLS, used for TCP addresses that are not loopback (or always, with `tls`): the PEM file
  // of the certificate(s) to trust, and the name to check the server's certificate for
  // (default: the address's host).
  bool tls = false;
  std::string tls_trusted_file;
  std::string tls_server_name;
  std::size_t max_message_bytes = 16u << 20;
};

struct sandbox_info {
  std::string id;
  std::string state; // "running", ... (the read model's names)
  std::string template_name;
  std::string runtime;
  events::sandbox_limits limits;
  std::vector<events::label> labels;
  std::int64_t created_at_ns = 0;
  std::int64_t end_time_ns = 0; // 0: no end time
  events::pause_mode pause_mode = events::pause_mode::filesystem;
  std::int64_t idle_timeout_ns = 0;
  std::int64_t lifetime_ns = 0;
  std::int64_t paused_retention_ns = 0;
  std::string on_timeout; // "delete" | "pause:filesystem" | "pause:memory"
  std::uint64_t writable_bytes = 0;
  std::string failure;
  std::uint64_t sequence = 0;
  std::string tenant;
  bool from_pool = false; // create only: served from a warm pool (docs/pools.md)
};

// Timeout changes: an empty field keeps the current setting (the default on create).
struct timeout_change {
  std::optional<std::chrono::nanoseconds> timeout; // the sandbox ends this long from now
  std::optional<std::chrono::nanoseconds> idle_timeout;
  std::optional<std::chrono::nanoseconds> lifetime; // from creation
  std::optional<std::chrono::nanoseconds> paused_retention;
  // What the idle timeout does: delete, or pause in a mode.
  std::optional<std::optional<events::pause_mode>> on_idle; // nullopt inside: delete
};

struct create_options {
  std::string template_name;     // "": the node's default
  std::string runtime;           // "": the node's default
  events::sandbox_limits limits; // zero fields: the node's defaults
  std::vector<events::label> labels;
  timeout_change timeouts;
  std::string client_request_id;
  std::vector<events::env_var> env; // every exec sees these; `secret` values are never logged
  bool no_pool = false;             // made cold even when a warm pool could serve it
  // A fork: the writable layer starts as this snapshot; template and runtime are the
  // snapshot's (leave them empty).
  std::string from_snapshot;
  events::network_policy network; // mode none: loopback only (docs/network.md)
};

// A warm pool (docs/pools.md): the key a create must match, and how many it keeps ready.
struct pool_options {
  std::string template_name;     // "": the node's default
  std::string runtime;           // "": the node's default
  events::sandbox_limits limits; // zero fields: the node's defaults
  std::uint32_t size = 0;
  std::uint32_t maximum = 0;    // at least size
  double refill_per_second = 0; // 0: 20
};

struct pool_info {
  std::string key; // "<template>/<runtime>/m<MiB>/c<millicores>/p<pids>/d<MiB>"
  pool_options settings;
  std::uint32_t ready = 0, making = 0, target = 0;
  std::uint64_t hits = 0, misses = 0, made = 0, failed = 0, retired = 0;
  double refill_seconds_mean = 0, refill_seconds_max = 0;
  std::vector<std::string> ready_ids;
  std::string last_error;
};

struct exec_options {
  std::vector<std::string> argv; // argv[0] is looked up in PATH when it has no '/'
  std::vector<events::env_var> env;
  std::string cwd;                     // "": "/"
  std::string user;                    // "": the template's user (root when none)
  std::string stdin_bytes;             // written to the process's stdin, then end of file
  std::chrono::nanoseconds timeout{0}; // 0: runs until it ends or the sandbox stops
  std::uint64_t max_output_bytes = 0;  // per stream; 0: the node's default cap
};

enum class output_stream { out, err };
// An exec's output, chunk by chunk, in the order the daemon sent it.
using output_callback = std::function<void(output_stream, std::string_view)>;
// A file's content, chunk by chunk.
using chunk_callback = std::function<void(std::string_view)>;
// The content of a file being written: fills `chunk` with the next piece (`chunk`), or says
// the content is complete (`end`) or could not be read (`failed`: nothing is written).
enum class source_step { chunk, end, failed };
using chunk_source = std::function<source_step(std::string& chunk)>;

struct streamed_event {
  events::event event;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};
// Return false to stop the stream.
using event_callback = std::function<bool(const streamed_event&)>;

class client {
public:
  // Connects and authenticates. permission_denied for an unknown token, unavailable when the
  // daemon cannot be reached.
  static result<client> connect(const client_options& options);
  ~client();
  client(client&&) noexcept;
  client& operator=(client&&) noexcept;

  const identity& who() const;
  result<std::string> version();

  result<sandbox_info> create(const create_options& options);
  result<sandbox_info> get(const std::string& sandbox_id);
  result<list_page> list(const list_filter& filter = {});
  result<sandbox_info> pause(const std::string& sandbox_id,
                             events::pause_mode mode = events::pause_mode::filesystem);
  result<sandbox_info> resume(const std::string& sandbox_id);
  result<void> remove(const std::string& sandbox_id);
  // Removes a deleted sandbox's private details from the read models (Session.redact).
  result<void> redact(const std::string& sandbox_id, const std::string& reason);
  result<sandbox_info> set_timeouts(const std::string& sandbox_id, const timeout_change& change);

  // The sandbox's events from `from_sequence`, then live ones, each handed to `on_event`
  // until it returns false or the stream ends. Answers why it ended: "stopped" (the
  // callback), "deleted" (the sandbox's last event was delivered).
  result<std::string> watch(const std::string& sandbox_id, std::uint64_t from_sequence,
                            const event_callback& on_event);

  // Runs argv in the sandbox and returns when it ends; its output reaches `on_output` as it
  // is produced (an empty callback: output is only counted).
  result<exec_result> exec(const std::string& sandbox_id, const exec_options& options,
                           const output_callback& on_output);
  // The same in the background: returns at once with the exec's id; its output is only
  // counted.
  result<exec_info> start(const std::string& sandbox_id, const exec_options& options);
  result<std::vector<exec_info>> execs(const std::string& sandbox_id);
  result<exec_result> wait_exec(const std::string& sandbox_id, const std::string& exec_id);
  // signal 0: SIGKILL. Ends every process the exec started.
  result<void> kill_exec(const std::string& sandbox_id, const std::string& exec_id, int signal);

  // Files: paths inside the sandbox.
  result<file_digest> read_file(const std::string& sandbox_id, const std::string& path,
                                const chunk_callback& on_chunk);
  // The content comes from `next` chunk by chunk; the file appears whole at the end
  // (a reader sees the old or the new file). A source that fails leaves the file as it was
  // (the upload is dropped) and the call answers invalid_argument.
  result<file_digest> write_file(const std::string& sandbox_id, const std::string& path,
                                 std::uint32_t mode, const chunk_source& next);
  result<dir_listing> list_dir(const std::string& sandbox_id, const std::string& path,
                               std::uint32_t limit = 0);
  result<file_info> stat(const std::string& sandbox_id, const std::string& path);
  result<void> make_dir(const std::string& sandbox_id, const std::string& path, bool parents);
  result<void> remove_path(const std::string& sandbox_id, const std::string& path, bool recursive);
  result<void> rename(const std::string& sandbox_id, const std::string& from,
                      const std::string& to);

  // Snapshots (docs/snapshots.md): a read-only snapshot of the sandbox's writable layer.
  result<snapshot_info> snapshot(const std::string& sandbox_id, const std::string& name = {});
  // This tenant's snapshots, oldest first; with a sandbox id, only that sandbox's.
  result<std::vector<snapshot_info>> list_snapshots(const std::string& sandbox_id = {});
  result<snapshot_info> get_snapshot(const std::string& snapshot_id);
  result<void> delete_snapshot(const std::string& snapshot_id);
  // A snapshot of the sandbox, then a new sandbox from it (options' from_snapshot is set).
  result<sandbox_info> fork(const std::string& sandbox_id, create_options options = {});

  // Templates (the global ones and this tenant's own).
  result<std::vector<template_info>> list_templates();
  result<template_info> get_template(const std::string& name);
  // Builds stock template `name` now (admin scope), or answers it when it is ready; the
  // build's phases and tool output reach `on_progress` (may be empty) as they come.
  using progress_callback =
    std::function<void(const std::string& phase, double fraction, const std::string& output)>;
  result<template_info> build_template(const std::string& name,
                                       const progress_callback& on_progress = {});
  result<template_info> delete_template(const std::string& name);
  // Template `name` made of the archive `next` gives (format "rootfs": a root filesystem
  // tarball; "image": an OCI image layout or docker save tar), in scope "tenant" (this
  // tenant's own) or "global" (admin); answers once it is ready.
  result<template_info> import_template(const std::string& name, const std::string& scope,
                                        const std::string& format, const std::string& description,
                                        const chunk_source& next,
                                        const progress_callback& on_progress = {});
  // Template `name` built from a spec (format "toml" or "dockerfile"; docs/templates.md), in
  // scope "tenant" or "global" (admin), with the build context `context` gives (a tar; a
  // source that ends at once: none); each step and its output reach `on_progress`; answers
  // once it is ready, or the error that failed it.
  struct spec_build {
    std::string name, scope = "tenant", format = "toml", spec, description;
  };
  result<template_info> build_template_spec(const spec_build& request, const chunk_source& context,
                                            const progress_callback& on_progress = {});

  // Admin scope.
  result<bill_report> bill(const std::string& tenant, std::int64_t from_ns, std::int64_t to_ns,
                           bill_grouping by = bill_grouping::sandbox);
  result<audit_page> audit(const audit_query& query);
  result<audit_check> audit_verify(const std::string& tenant = "");
  // The whole log from `from` (partition -> offset; missing partitions from 0): "caught up"
  // without follow once the end offsets as of the call are reached.
  result<std::string> tail(const std::map<std::int32_t, std::int64_t>& from, bool follow,
                           const event_callback& on_event);
  // Every event of one sandbox from the log itself, in log order (not_found when none).
  result<std::vector<streamed_event>> history(const std::string& sandbox_id);
  // Projection `name` ("" = "read_models") rebuilt into a scratch schema and compared with
  // the live read models: no differences when they are exact.
  result<projection_check> verify_projection(const std::string& name = "");
  // Every projection's offsets against the log's end offsets, with the lag.
  result<std::vector<projection_partition>> projection_status();
  // Projection `name` ("" = "read_models") rebuilt from the log and swapped in for the live
  // read models in one transaction, while the daemon keeps serving.
  result<projection_rebuild> rebuild_projection(const std::string& name = "");
  // The actors' states against their replayed events: one sandbox, or "" for every one.
  result<determinism_check> check_determinism(const std::string& sandbox_id = "");
  // Warm pools: listed, started or changed (size, maximum, rate), ended (false: none such).
  result<std::vector<pool_info>> pools();
  result<void> set_pool(const pool_options& pool);
  result<bool> remove_pool(const pool_options& key);

  struct impl;

private:
  explicit client(std::unique_ptr<impl> m);
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::api
