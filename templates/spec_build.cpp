// template_registry::build_spec — a template built from a spec (docs/templates.md "Build from
// a spec"): the steps of build_spec.hpp run in order over the layers so far, each RUN in a
// build sandbox of its own on the node's build runtime (network none), each COPY from the
// build context, with the build cache (build_cache.hpp) deciding which steps need to run.
//
// Every step is a step_started before it runs and a step_finished after (with the layer it
// made, then that layer's layer_added, in one append); a failed step is followed by the
// template's failed. Layers are pinned against collection from their commit until the
// template is settled; the FROM template is held (no deletion) for the whole build.
#include "templates/template_registry.hpp"

#include "runtime/driver.hpp"
#include "templates/build_cache.hpp"
#include "templates/step_layers.hpp"

#include <algorithm>
#include <chrono>

namespace sandboxd::templates {
namespace {

using env_list = std::vector<std::pair<std::string, std::string>>;

std::vector<events::env_var> env_vars(const env_list& env) {
  std::vector<events::env_var> out;
  for (const auto& [k, v] : env)
    out.push_back({k, v, false, std::nullopt});
  return out;
}

void set_var(env_list& env, const std::string& name, const std::string& value) {
  for (auto& [k, v] : env)
    if (k == name) {
      v = value;
      return;
    }
  env.emplace_back(name, value);
}

events::nanoseconds since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<events::nanoseconds>(std::chrono::steady_clock::now() - start);
}

sha256_digest digest_of(const std::string& hex) {
  sha256_digest d{};
  for (std::size_t i = 0; i < d.size() && 2 * i + 1 < hex.size(); ++i)
    d[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return d;
}

// What a RUN step's process did.
struct run_outcome {
  int exit_code = 0;
  std::uint64_t output_bytes = 0;
  std::optional<made_layer> layer;
  bool timed_out = false;
};

} // namespace

struct template_registry::spec_run {
  template_registry& r;
  const asker& who;
  const progress_sink& progress;
  template_state t;
  std::string from_name;
  std::size_t step_count = 0;
  // The build so far: the layers (lowest first) and the configuration in effect.
  std::vector<events::template_layer> layers;
  env_list env;
  std::string workdir, user;
  std::vector<std::string> command;
  std::vector<std::string> pinned;

  ~spec_run() { unpin_all(); }
  void unpin_all() {
    for (const auto& p : pinned)
      r.unpin(p);
    pinned.clear();
  }

  void report(const std::string& phase, double fraction, const std::string& output = {}) {
    if (progress)
      progress({phase, fraction, output});
  }

  result<void> emit(std::vector<events::template_change> changes) {
    return r.emit(t, who.tenant, who.principal, std::move(changes));
  }

  std::vector<std::string> stack() const {
    std::vector<std::string> out;
    for (const auto& l : layers)
      out.push_back(to_hex(l.sha256));
    return out;
  }

  // Pins the stored layer `hex` (under the collection lock); false when it is not stored.
  bool pin_stored(const std::string& hex) {
    std::lock_guard<std::mutex> gc(r.gc_mu_);
    if (!r.options_.layers->has(hex))
      return false;
    r.pin(hex);
    pinned.push_back(hex);
    return true;
  }

  // Commits a layer `make` fills, pinned against collection until the build is settled.
  template <class Make>
  result<made_layer> committed(Make&& make) {
    std::lock_guard<std::mutex> gc(r.gc_mu_);
    auto m = make();
    if (m) {
      r.pin(m->layer.summary.sha256);
      pinned.push_back(m->layer.summary.sha256);
    }
    return m;
  }

  events::template_layer_added layer_added(const sha256_digest& sha, std::uint64_t bytes,
                                           std::uint64_t entries, const std::string& origin,
                                           bool reused) {
    events::template_layer_added a;
    a.index = static_cast<std::uint32_t>(layers.size());
    a.sha256 = sha;
    a.bytes = bytes;
    a.entries = entries;
    a.origin = origin;
    a.reused = reused;
    layers.push_back({sha, bytes});
    return a;
  }

  // The FROM template's layers and configuration, as this template's start.
  result<void> start_from(const template_state& from) {
    const auto& ready = *from.ready;
    for (const auto& v : ready.env)
      if (!v.secret)
        env.emplace_back(v.name, v.value);
    workdir = ready.working_directory;
    user = ready.user;
    command = ready.command;
    for (const auto& l : ready.layers) {
      const std::string hex = to_hex(l.sha256);
      if (!pin_stored(hex))
        return make_error(errc::internal, "layer " + hex + " of template " + from.name +
                                            " is missing from the layer store");
      std::uint64_t entries = 0;
      for (const auto& a : from.layers_added)
        if (a.sha256 == l.sha256)
          entries = a.entries;
      if (auto e = emit({layer_added(l.sha256, l.bytes, entries, "template " + from.name, true)});
          !e)
        return e;
    }
    return {};
  }

  // An earlier build's layer `sha` as recorded when it was added: its bytes and entries.
  std::pair<std::uint64_t, std::uint64_t> recorded(const sha256_digest& sha) {
    std::lock_guard<std::mutex> g(r.mu_);
    for (const auto& [id, other] : r.catalog_.by_id)
      for (const auto& a : other.layers_added)
        if (a.sha256 == sha)
          return {a.bytes, a.entries};
    return {r.options_.layers->bytes(to_hex(sha)), 0};
  }

  result<run_outcome> run(const spec_step& s, unsigned index, const std::string& phase);
  result<void> step(const spec_step& s, unsigned index, const build_context& context);
};

result<run_outcome> template_registry::spec_run::run(const spec_step& s, unsigned index,
                                                     const std::string& phase) {
  auto* driver = r.options_.build.driver;
  const auto& o = r.options_.build;
  runtime::create_request cr;
  cr.id = "build-" + t.id.substr(4) + "-" + std::to_string(index);
  cr.template_name = t.name;
  cr.layers = stack();
  cr.limits.memory_bytes = o.memory_bytes;
  cr.limits.cpu_millis = o.cpu_millis;
  cr.limits.pids = o.pids;
  cr.limits.disk_bytes = o.disk_bytes;
  cr.network = runtime::network_policy::none;
  cr.env = env;
  auto made = driver->create(cr);
  if (!made)
    return make_error(made.code(), "the build sandbox could not be made: " + made.err().message);
  struct remove_after {
    runtime::driver* d;
    std::string id;
    ~remove_after() { d->remove(id); }
  } cleanup{driver, cr.id};
  if (auto st = driver->start(cr.id); !st)
    return make_error(st.code(), "the build sandbox did not start: " + st.err().message);
  // What the runtime put in the writable layer before the step is not the step's.
  if (auto p = driver->pause(cr.id, runtime::pause_mode::filesystem); !p)
    return p.err();
  upper_baseline before;
  {
    auto w = driver->open_writable_layer(cr.id);
    if (!w)
      return w.err();
    auto b = baseline_of(w->dir.get());
    if (!b)
      return b.err();
    before = std::move(b).value();
  }
  if (auto re = driver->resume(cr.id); !re)
    return re.err();
  const std::string dir = workdir.empty() ? "/" : workdir;
  if (dir != "/") // WORKDIR makes its directory, in the step's layer
    if (auto md = driver->make_dir(cr.id, dir, true); !md)
      return make_error(md.code(), "WORKDIR " + dir + ": " + md.err().message);
  run_outcome out;
  runtime::exec_request x;
  x.argv = s.args;
  x.cwd = dir;
  x.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.step_timeout);
  x.max_output_bytes = 64ull << 20;
  x.on_output = [&](runtime::output_stream, std::string_view chunk) {
    out.output_bytes += chunk.size();
    report(phase, -1, std::string(chunk));
  };
  auto ran = driver->exec(cr.id, x);
  if (!ran)
    return make_error(ran.code(), "the step could not run: " + ran.err().message);
  out.exit_code = ran->exit_code;
  out.timed_out = ran->timed_out;
  if (out.exit_code != 0 || ran->timed_out)
    return out;
  if (auto p = driver->pause(cr.id, runtime::pause_mode::filesystem); !p)
    return p.err();
  auto w = driver->open_writable_layer(cr.id);
  if (!w)
    return w.err();
  const auto below = stack();
  result<std::optional<made_layer>> m = std::optional<made_layer>();
  {
    std::lock_guard<std::mutex> gc(r.gc_mu_);
    m = layer_of_upper(*r.options_.layers, w->dir.get(), w->host_id_base, before, below,
                       r.options_.limits);
    if (m && m.value()) {
      r.pin(m.value()->layer.summary.sha256);
      pinned.push_back(m.value()->layer.summary.sha256);
    }
  }
  if (!m)
    return m.err();
  out.layer = std::move(m).value();
  return out;
}

result<void> template_registry::spec_run::step(const spec_step& s, unsigned index,
                                               const build_context& context) {
  const std::string text = step_text(s);
  const std::string phase =
    "step " + std::to_string(index) + "/" + std::to_string(step_count) + ": " + text.substr(0, 200);
  const double fraction = static_cast<double>(index - 1) / static_cast<double>(step_count);
  auto expanded = [&](const std::string& v) -> result<std::string> {
    auto x = expand_variables(v, env);
    if (!x)
      return make_error(errc::invalid_argument,
                        "step " + std::to_string(index) + " (" + text + "): " + x.err().message);
    return x;
  };
  switch (s.kind) {
  case step_kind::env:
    for (const auto& [name, value] : s.env) {
      auto v = expanded(value);
      if (!v)
        return v.err();
      set_var(env, name, v.value());
    }
    return {};
  case step_kind::workdir: {
    auto v = expanded(s.args.front());
    if (!v)
      return v.err();
    workdir = resolve_directory(workdir, v.value());
    return {};
  }
  case step_kind::user: {
    auto v = expanded(s.args.front());
    if (!v)
      return v.err();
    user = v.value();
    return {};
  }
  case step_kind::run:
  case step_kind::copy:
    break;
  }

  report(phase, fraction);
  step_inputs in;
  for (const auto& l : layers)
    in.layers.push_back(l.sha256);
  in.env = env;
  in.working_directory = workdir;
  in.text = text;
  copy_plan plan;
  if (s.kind == step_kind::copy) {
    for (std::size_t i = 0; i + 1 < s.args.size(); ++i) {
      auto v = expanded(s.args[i]);
      if (!v)
        return v.err();
      if (auto p = copy_source_parts(v.value()); !p)
        return make_error(errc::invalid_argument,
                          "step " + std::to_string(index) + ": " + p.err().message);
      plan.sources.push_back(std::move(v).value());
    }
    auto dest = expanded(s.args.back());
    if (!dest)
      return dest.err();
    const bool as_dir = !dest->empty() && dest->back() == '/';
    plan.destination = resolve_directory(workdir, dest.value()) + (as_dir ? "/" : "");
    if (plan.destination == "//")
      plan.destination = "/";
    plan.stack = stack();
    auto files = copied_files(*r.options_.layers, context, plan, r.options_.limits);
    if (!files)
      return make_error(files.code(), "step " + std::to_string(index) + " (" + text +
                                        "): " + files.err().message);
    in.files = files.value();
  }
  const auto key = step_cache_key(in);
  events::template_step_started started;
  started.index = index;
  started.instruction = text;
  started.cache_key = key;
  if (auto e = emit({started}); !e)
    return e;
  const auto began = std::chrono::steady_clock::now();
  events::template_step_finished finished;
  finished.index = index;

  // The cache: an earlier build's step with the same key, whose layer is still stored.
  std::optional<cached_step> hit;
  {
    std::lock_guard<std::mutex> g(r.mu_);
    hit = find_cached(r.catalog_, who, key);
  }
  if (hit && (!hit->layer || pin_stored(to_hex(*hit->layer)))) {
    finished.cached = true;
    finished.layer = hit->layer;
    finished.duration = since(began);
    std::vector<events::template_change> changes{finished};
    if (hit->layer) {
      const auto [bytes, entries] = recorded(*hit->layer);
      changes.push_back(layer_added(*hit->layer, bytes, entries,
                                    "step " + std::to_string(index) + " (cached)", true));
    }
    report(phase + " (cached)", fraction);
    return emit(std::move(changes));
  }

  auto fail = [&](const error& err, int exit_code) -> result<void> {
    finished.outcome = events::op_outcome::failed;
    finished.exit_code = exit_code;
    finished.duration = since(began);
    finished.failure = err;
    if (auto e = emit({finished}); !e)
      return e;
    return err;
  };
  std::optional<made_layer> made;
  if (s.kind == step_kind::copy) {
    auto m = committed(
      [&] { return layer_of_copy(*r.options_.layers, context, plan, r.options_.limits); });
    if (!m)
      return fail(make_error(m.code(), "step " + std::to_string(index) + " (" + text +
                                         "): " + m.err().message),
                  0);
    made = std::move(m).value();
  } else {
    if (!r.options_.build.driver)
      return fail(make_error(errc::unavailable,
                             "this sandboxd has no runtime for RUN steps (it runs neither runsc "
                             "nor crun)"),
                  0);
    auto ran = run(s, index, phase);
    if (!ran)
      return fail(make_error(ran.code(), "step " + std::to_string(index) + " (" + text +
                                           "): " + ran.err().message),
                  -1);
    finished.output_bytes = ran->output_bytes;
    if (ran->timed_out)
      return fail(
        make_error(errc::invalid_argument,
                   "step " + std::to_string(index) + " (" + text + ") did not end within " +
                     std::to_string(r.options_.build.step_timeout.count()) + " s; it was killed"),
        ran->exit_code);
    if (ran->exit_code != 0)
      return fail(make_error(errc::invalid_argument, "step " + std::to_string(index) + " (" + text +
                                                       ") exited with status " +
                                                       std::to_string(ran->exit_code) +
                                                       "; fix it and build again"),
                  ran->exit_code);
    made = std::move(ran->layer);
  }
  finished.duration = since(began);
  std::vector<events::template_change> changes;
  if (made) {
    finished.layer = digest_of(made->layer.summary.sha256);
    changes.push_back(finished);
    changes.push_back(layer_added(*finished.layer, made->layer.bytes, made->layer.summary.entries,
                                  "step " + std::to_string(index), made->layer.reused));
  } else {
    changes.push_back(finished);
  }
  return emit(std::move(changes));
}

result<template_state> template_registry::build_spec(const asker& who, const spec_request& request,
                                                     chunk_source context,
                                                     const progress_sink& progress) {
  auto spec = parse_spec(request.format, request.text);
  if (!spec)
    return spec.err();
  if (auto m = may_make(who, request.scope, request.name); !m) // the name and the quota
    return m.err();
  auto hold = acquire(who, spec->from, progress);
  if (!hold)
    return make_error(hold.code(), "FROM " + spec->from + ": " + hold.err().message);
  std::optional<template_state> from;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (const auto* f = find_id(catalog_, hold.value()->ref().id))
      from = *f;
  }
  if (!from || !from->ready)
    return make_error(errc::internal, "template " + spec->from + " is not ready after all");
  if (request.scope == events::template_scope::global &&
      from->scope == events::template_scope::tenant)
    return make_error(errc::invalid_argument,
                      "a global template cannot be built on " + spec->from +
                        ", a tenant's own template: build it FROM a global one");

  spec_run b{*this, who, progress, {}, spec->from};
  b.t.id = new_template_id();
  b.t.name = request.name;
  b.t.scope = request.scope;
  b.step_count = spec->steps.size();
  events::template_created created;
  created.source = events::template_source::spec;
  created.description =
    std::string(request.format == spec_format::dockerfile ? "Dockerfile" : "spec") +
    (request.description.empty() ? "" : " " + request.description) + " (FROM " + spec->from + ")";
  created.input_sha256 = sha256_of(request.text);
  created.parent_id = from->id;
  if (auto e = b.emit({created}); !e)
    return e.err();

  auto run_all = [&]() -> result<void> {
    if (auto f = b.start_from(*from); !f)
      return f;
    b.report("receiving the build context", -1);
    auto ctx = build_context::receive(*options_.layers, std::move(context), options_.limits);
    if (!ctx)
      return ctx.err();
    for (std::size_t i = 0; i < spec->steps.size(); ++i)
      if (auto s = b.step(spec->steps[i], static_cast<unsigned>(i + 1), *ctx.value()); !s)
        return s;
    return {};
  };
  if (auto r = run_all(); !r) {
    b.emit({events::template_failed{r.err()}});
    b.unpin_all();
    collect_layers();
    return r.err();
  }
  events::template_ready ready;
  ready.layers = b.layers;
  ready.env = env_vars(b.env);
  ready.working_directory = b.workdir;
  ready.user = b.user;
  ready.command = b.command;
  ready.own_bytes = 0;
  for (const auto& l : b.layers) {
    ready.total_bytes += l.bytes;
    // FROM's layers are its (or, for a global FROM, nobody's) to pay for.
    const auto& below = from->ready->layers;
    if (std::none_of(below.begin(), below.end(),
                     [&](const events::template_layer& f) { return f.sha256 == l.sha256; }))
      *ready.own_bytes += l.bytes;
  }
  ready.digest =
    template_digest(ready.layers, ready.env, ready.working_directory, ready.user, ready.command);
  if (auto e = b.emit({ready}); !e)
    return e.err();
  b.report("template " + request.name + " is ready", 1.0);
  std::lock_guard<std::mutex> g(mu_);
  return catalog_.by_id.at(b.t.id);
}

} // namespace sandboxd::templates
