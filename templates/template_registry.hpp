// template_registry — the node's templates: the only writer of the template stream
// (events::template_stream_key), the fold of it (template_catalog.hpp), and the builds and
// imports that fill the layer store.
//
// Guarantees:
// - Every change is an event before anyone relies on it: a template is usable once its
//   `ready` is durable; its layers are in the store (committed, read-only) before their
//   `layer_added`. An append that fails is reported (unavailable) and nothing of the change
//   is assumed; one whose fate is unknown is appended again, identical, until the log takes it
//   (readers drop the duplicate by its sequence number).
// - On start the registry folds the stream (from its snapshot, <dir>/registry.snapshot, and
//   the log after it); a build a crash interrupted gets `failed` ("interrupted"), staging
//   trees are deleted and layers no live template holds are collected.
// - A sandbox's create holds a reservation (acquire) from the template lookup until its
//   `created` is durable and reported through note_use: a template is deleted only when no
//   sandbox uses it and no create holds it, so a sandbox never starts on collected layers.
// - Stock templates (stock_templates.hpp) are built on first use: concurrent callers wait
//   for one build and all see its progress. A stock build that failed is not tried again for
//   a minute (callers get its failure).
// - Every member function is thread-safe. Builds and imports block the calling thread for
//   as long as they take; run them off any event loop.
#pragma once

#include "base/result.hpp"
#include "events/event_log.hpp"
#include "runtime/layer_store.hpp"
#include "templates/archive_reader.hpp"
#include "templates/build_spec.hpp"
#include "templates/stock_templates.hpp"
#include "templates/template_catalog.hpp"
#include "templates/template_quota.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace sandboxd::runtime {
class driver;
}

namespace sandboxd::templates {

// Spec builds (spec_build.cpp, docs/templates.md "Build from a spec"): where RUN steps run
// and within what.
struct build_options {
  runtime::driver* driver = nullptr; // not owned; null: a spec with RUN is unavailable
  std::string runtime;               // the driver's name, for progress and messages
  std::uint64_t memory_bytes = 2ull << 30;
  std::uint32_t cpu_millis = 2000;
  std::uint32_t pids = 2048;
  std::uint64_t disk_bytes = 0; // a build sandbox's writable layer; 0: the driver's default
  std::chrono::seconds step_timeout{3600};
  // How much of the layers of steps of builds no longer live the build cache keeps from
  // collection (build_cache.hpp).
  std::uint64_t cache_bytes = 4ull << 30;
};

struct registry_options {
  events::event_log* log = nullptr;             // not owned; outlives the registry
  std::shared_ptr<runtime::layer_store> layers; // the node's template layers
  std::string dir;                              // the registry's own files
  stock_options stock;                          // where stock tarballs are cached
  import_limits limits;
  template_quota quota; // per tenant, on its own templates (set_quota changes it)
  std::function<events::time_point()> clock; // empty: the system clock
  build_options build;
};

// What a build or import reports while it runs (it may be called from any thread).
struct template_progress {
  std::string phase;
  double fraction = -1; // 0..1, or -1 when unknown
  std::string output;   // a tool's output, when there is some
};
using progress_sink = std::function<void(const template_progress&)>;

class template_registry;

// A template held for one sandbox create; released when destroyed.
class template_hold {
public:
  template_hold(template_registry* r, std::string id, events::template_ref ref)
      : registry_(r), id_(std::move(id)), ref_(std::move(ref)) {}
  ~template_hold();
  template_hold(const template_hold&) = delete;
  template_hold& operator=(const template_hold&) = delete;
  const events::template_ref& ref() const { return ref_; }

private:
  template_registry* registry_;
  std::string id_;
  events::template_ref ref_;
};

enum class archive_format { rootfs, image };

struct spec_request {
  std::string name;
  events::template_scope scope = events::template_scope::tenant;
  spec_format format = spec_format::toml;
  std::string text;        // the spec itself
  std::string description; // e.g. the spec's file name
};

struct import_request {
  std::string name;
  events::template_scope scope = events::template_scope::tenant;
  archive_format format = archive_format::rootfs;
  std::string description; // e.g. the file name the client read
};

class template_registry {
public:
  // Folds the stream, settles interrupted builds, collects unheld layers. Throws on faults
  // (a damaged log, a layer store that cannot be read).
  explicit template_registry(registry_options options);
  ~template_registry();
  template_registry(const template_registry&) = delete;
  template_registry& operator=(const template_registry&) = delete;

  // control_plane_options::template_use.
  void note_use(const std::string& sandbox_id, const std::string& template_id, bool in_use);

  // The ready template `name` as `who` sees it, held for a create. A stock template that is
  // not built yet is built now (progress to `progress`). not_found names what exists.
  result<std::shared_ptr<template_hold>> acquire(const asker& who, const std::string& name,
                                                 const progress_sink& progress);
  // acquire() without waiting: the hold, or null when `name` is a stock template still to be
  // built (call acquire() off any event loop then), or acquire()'s error.
  result<std::shared_ptr<template_hold>> acquire_ready(const asker& who, const std::string& name);

  std::vector<template_state> list(const asker& who) const;
  result<template_state> get(const asker& who, const std::string& name) const;
  // The live sandboxes that use template `id`.
  std::vector<std::string> users_of(const std::string& id) const;
  // Deletes `name` (see template_catalog's may_delete), then collects its layers that no
  // other template holds.
  result<template_state> remove(const asker& who, const std::string& name);

  // Builds (or rebuilds, once deleted) a stock template now. Without admin, what the first
  // create of `name` would do (acquire()): the stock build if it is not built, the waiting
  // minute after a failure holds; an admin's build tries again at once.
  result<template_state> build_stock(const asker& who, const std::string& name,
                                     const progress_sink& progress);
  // Imports an archive streamed from `source` as template request.name.
  result<template_state> import_archive(const asker& who, const import_request& request,
                                        chunk_source source, const progress_sink& progress);

  // Builds template request.name from a spec (spec_build.cpp): FROM's layers, then a layer
  // for each RUN (run in a build sandbox, network none) and COPY (files of the build context,
  // a tar read from `context` first; empty: none) that changed something, reusing the layers
  // of earlier builds' steps with the same inputs (build_cache.hpp). Step output goes to
  // `progress`. A spec that does not parse is invalid_argument before anything is recorded;
  // a step that fails is the template's `failed`.
  result<template_state> build_spec(const asker& who, const spec_request& request,
                                    chunk_source context, const progress_sink& progress);
  // Whether `who` may start template `name` in `scope` now: template_catalog's may_make, and
  // for a tenant's own template its quota (template_quota.hpp). What an import's call checks
  // before a byte is sent; the import checks again before it logs anything.
  result<void> may_make(const asker& who, events::template_scope scope,
                        const std::string& name) const;
  // The per-tenant quota on its own templates, for the templates made from now on.
  void set_quota(const template_quota& q);

  catalog snapshot() const;
  runtime::layer_store& layers() { return *options_.layers; }
  // Deletes the layers no live template holds (and no build in progress made). Returns how
  // many it deleted.
  std::size_t collect_layers();

private:
  friend class template_hold;
  struct stock_job;
  void release(const std::string& id);
  // acquire_ready's lookup; `attempt` > 0 after a stock build (no second build is started).
  result<std::shared_ptr<template_hold>> lookup(const asker& who, const std::string& name,
                                                int attempt);
  events::time_point now() const;
  // Appends `changes` of template `t` (one event each, one append) and applies them.
  result<void> emit(const template_state& t, const std::string& tenant,
                    const std::string& principal, std::vector<events::template_change> changes);
  void load();
  void write_snapshot();
  // The stock build of `d`, for `who` (whose tenant the events carry), run by one caller.
  result<template_state> run_stock_build(const asker& who, const stock_definition& d,
                                         const progress_sink& progress);
  result<template_state> stock_for(const asker& who, const stock_definition& d,
                                   const progress_sink& progress);
  struct spec_run; // one spec build in progress (spec_build.cpp)
  // A layer committed by a build and not yet announced is pinned against collection.
  void pin(const std::string& sha256);
  void unpin(const std::string& sha256);
  // A layer's commit under the collection lock, pinned (and added to `pinned`) before the lock
  // goes: layer_making's commit_guard. Only the commit takes the lock, never the filling.
  runtime::committed_layer commit_pinned(const std::function<runtime::committed_layer()>& commit,
                                         std::vector<std::string>& pinned);

  registry_options options_;
  std::int32_t partition_ = 0;

  mutable std::mutex mu_; // everything below but the appends' order
  catalog catalog_;
  std::vector<std::string> records_; // every template event, encoded (for the snapshot)
  std::int64_t next_offset_ = 0;     // the stream is folded up to here in its partition
  std::map<std::string, std::set<std::string>> uses_; // template id -> live sandboxes
  std::map<std::string, std::string> sandbox_template_;
  std::map<std::string, int> holds_; // template id -> creates holding it
  std::set<std::string> deleting_;   // template ids being deleted
  std::multiset<std::string> pins_;  // layers made and not yet announced
  std::map<std::string, std::shared_ptr<stock_job>> stock_jobs_; // by name
  std::map<std::string, std::pair<events::time_point, events::error>> stock_failures_;

  std::mutex write_mu_; // one append at a time: dense sequence numbers
  std::mutex gc_mu_;    // a layer's commit and pin against a collection
  std::mutex stock_mu_; // one stock build at a time (python waits for debian)
  std::mutex make_mu_;  // a quota check and the event it allows, together
};

// tpl_<16 hex digits>, random.
std::string new_template_id();

} // namespace sandboxd::templates
