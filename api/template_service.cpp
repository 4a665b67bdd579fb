// template_service — the Templates capability (Session.templates): the node's templates as
// its registry (templates/template_registry.hpp) holds them, for the calling tenant. Lookups
// answer on the loop (the registry's catalog is in memory); builds and deletions run on the
// template workers, since a stock build takes minutes and a deletion collects layers.
#include "api/convert.hpp"
#include "api/service_context.hpp"
#include "api/upload_pipe.hpp"
#include "templates/stock_templates.hpp"
#include "templates/template_registry.hpp"

#include <kj/async.h>

#include "base/utf8.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

namespace sandboxd::api {
namespace {

std::int64_t ns_of(events::time_point t) {
  return t.time_since_epoch().count();
}

capnp::Data::Reader data_of(const sha256_digest& d) {
  return {d.data(), d.size()};
}

void fill_env(capnp::List<schema::EnvVar>::Builder out, const std::vector<events::env_var>& env) {
  for (unsigned i = 0; i < env.size(); ++i) {
    out[i].setName(env[i].name);
    out[i].setSecret(env[i].secret);
    if (!env[i].secret)
      out[i].setValue(env[i].value);
    if (env[i].value_sha256)
      out[i].setValueSha256(data_of(*env[i].value_sha256));
  }
}

schema::TemplateScope scope_of(events::template_scope s) {
  return s == events::template_scope::tenant ? schema::TemplateScope::TENANT
                                             : schema::TemplateScope::GLOBAL;
}

schema::TemplateSource source_of(events::template_source s) {
  switch (s) {
  case events::template_source::import_archive:
    return schema::TemplateSource::IMPORT;
  case events::template_source::spec:
    return schema::TemplateSource::SPEC;
  case events::template_source::stock:
    break;
  }
  return schema::TemplateSource::STOCK;
}

void fill_template(rpc::TemplateInfo::Builder out, const templates::template_state& t,
                   const std::vector<std::string>& used_by) {
  out.setId(t.id);
  out.setName(t.name);
  out.setScope(scope_of(t.scope));
  if (t.scope == events::template_scope::tenant)
    out.setTenant(t.tenant);
  out.setStatus(std::string(templates::to_string(t.status)));
  out.setSource(source_of(t.created.source));
  out.setDescription(t.created.description);
  if (t.ready) {
    const auto& r = *t.ready;
    out.setDigest(data_of(r.digest));
    auto layers = out.initLayers(static_cast<unsigned>(r.layers.size()));
    for (unsigned i = 0; i < r.layers.size(); ++i) {
      layers[i].setSha256(data_of(r.layers[i].sha256));
      layers[i].setBytes(r.layers[i].bytes);
    }
    fill_env(out.initEnv(static_cast<unsigned>(r.env.size())), r.env);
    out.setWorkingDirectory(r.working_directory);
    out.setUser(r.user);
    auto cmd = out.initCommand(static_cast<unsigned>(r.command.size()));
    for (unsigned i = 0; i < r.command.size(); ++i)
      cmd.set(i, r.command[i]);
    out.setTotalBytes(r.total_bytes);
  }
  if (t.failure)
    out.setFailure(to_string(t.failure->code) + ": " + t.failure->message);
  out.setCreatedAtNs(ns_of(t.created_at));
  if (t.status != templates::template_status::building)
    out.setSettledAtNs(ns_of(t.settled_at));
  const auto n = std::min<std::size_t>(used_by.size(), 100);
  auto users = out.initUsedBy(static_cast<unsigned>(n));
  for (unsigned i = 0; i < n; ++i)
    users.set(i, used_by[i]);
}

events::template_scope scope_of(schema::TemplateScope s) {
  return s == schema::TemplateScope::GLOBAL ? events::template_scope::global
                                            : events::template_scope::tenant;
}

// An import's or a build's description: at most 256 bytes of UTF-8 (invalid_argument).
std::string description_of(capnp::Text::Reader text, const std::string& whose) {
  std::string d = whole_text(text);
  if (d.size() > 256 || !is_text(d))
    throw_error(errc::invalid_argument,
                whose + " description is at most 256 bytes of UTF-8; shorten it");
  return d;
}

// A stock template that this node has not built yet: what a build or first use would make.
void fill_stock(rpc::TemplateInfo::Builder out, const templates::stock_definition& d) {
  out.setName(d.name);
  out.setScope(schema::TemplateScope::GLOBAL);
  out.setStatus("stock");
  out.setSource(schema::TemplateSource::STOCK);
  out.setDescription(d.description);
  auto cmd = out.initCommand(static_cast<unsigned>(d.command.size()));
  for (unsigned i = 0; i < d.command.size(); ++i)
    cmd.set(i, d.command[i]);
}

// Carries a build's progress from the template worker to the caller's TemplateProgress, on
// the loop thread: one call at a time, and what arrives meanwhile is merged into the next
// (the latest phase and fraction, the output joined, at most 64 KiB of it).
class progress_relay : public kj::TaskSet::ErrorHandler {
public:
  explicit progress_relay(rpc::TemplateProgress::Client sink)
      : sink_(kj::mv(sink)), tasks_(*this) {}

  void add(const templates::template_progress& p) {
    phase_ = p.phase;
    fraction_ = p.fraction;
    output_ += p.output;
    if (output_.size() > k_max_output)
      output_.erase(0, output_.size() - k_max_output);
    pending_ = true;
    if (!in_flight_)
      send();
  }

  void taskFailed(kj::Exception&&) override {
    dead_ = true; // the caller's sink went away: the build goes on without it
  }

private:
  static constexpr std::size_t k_max_output = 64 * 1024;

  void send() {
    if (dead_ || !pending_)
      return;
    auto req = sink_.progressRequest();
    req.setPhase(phase_);
    req.setFraction(fraction_);
    req.setOutput(output_);
    output_.clear();
    pending_ = false;
    in_flight_ = true;
    tasks_.add(req.send().then([this] {
      in_flight_ = false;
      send();
    }));
  }

  rpc::TemplateProgress::Client sink_;
  std::string phase_, output_;
  double fraction_ = -1;
  bool pending_ = false, in_flight_ = false, dead_ = false;
  kj::TaskSet tasks_;
};

using imported = result<templates::template_state>;

class template_upload final : public rpc::TemplateUpload::Server {
public:
  template_upload(std::shared_ptr<service_context> ctx, std::shared_ptr<upload_pipe> pipe,
                  kj::Promise<std::shared_ptr<imported>> done,
                  templates::template_registry* registry)
      : ctx_(std::move(ctx)), pipe_(std::move(pipe)), done_(done.fork()), registry_(registry) {}
  ~template_upload() {
    if (!committed_)
      pipe_->fail("the upload was dropped before its commit");
  }

  kj::Promise<void> write(WriteContext context) override {
    if (committed_)
      throw_error(errc::conflict, "the archive was committed already; start another import");
    auto data = context.getParams().getData();
    kj::Maybe<kj::Promise<bool>> room;
    pipe_->push(std::string(reinterpret_cast<const char*>(data.begin()), data.size()), [&] {
      auto [promise, wake] = ctx_->bridge->expect<bool>();
      room = kj::mv(promise);
      return wake;
    });
    KJ_IF_MAYBE (r, room)
      return r->ignoreResult();
    return kj::READY_NOW;
  }

  kj::Promise<void> commit(CommitContext context) override {
    if (committed_)
      throw_error(errc::conflict, "the archive was committed already");
    committed_ = true;
    pipe_->close();
    return done_.addBranch().then([context](std::shared_ptr<imported> t) mutable {
      fill_template(context.getResults().initTemplate(), take(std::move(*t)), {});
    });
  }

private:
  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<upload_pipe> pipe_;
  kj::ForkedPromise<std::shared_ptr<imported>> done_;
  templates::template_registry* registry_;
  bool committed_ = false;
};

class template_service final : public rpc::Templates::Server {
public:
  template_service(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn,
                   identity who)
      : ctx_(std::move(ctx)), conn_(std::move(conn)), who_(std::move(who)) {}

  kj::Promise<void> list(ListContext context) override {
    return plain_call(*ctx_, conn_, "Templates.list", [this, context]() mutable {
      auto& r = registry();
      const auto all = r.list(asker());
      std::vector<const templates::stock_definition*> unbuilt;
      for (const auto& d : templates::stock_definitions())
        if (std::none_of(all.begin(), all.end(), [&](const auto& t) {
              return t.name == d.name && t.scope == events::template_scope::global;
            }))
          unbuilt.push_back(&d);
      auto out =
        context.getResults().initTemplates(static_cast<unsigned>(all.size() + unbuilt.size()));
      unsigned i = 0;
      for (const auto& t : all)
        fill_template(out[i++], t, r.users_of(t.id));
      for (const auto* d : unbuilt)
        fill_stock(out[i++], *d);
      return kj::READY_NOW;
    });
  }

  kj::Promise<void> get(GetContext context) override {
    return plain_call(*ctx_, conn_, "Templates.get", [this, context]() mutable {
      auto& r = registry();
      const std::string name = whole_text(context.getParams().getName());
      auto t = r.get(asker(), name);
      if (!t) {
        // A stock template not built yet is there to be built (by its first use).
        if (const auto* d = templates::find_stock(name)) {
          fill_stock(context.getResults().initTemplate(), *d);
          return kj::READY_NOW;
        }
        throw_error(t.err());
      }
      fill_template(context.getResults().initTemplate(), t.value(), r.users_of(t.value().id));
      return kj::READY_NOW;
    });
  }

  kj::Promise<void> build(BuildContext context) override {
    return plain_call(*ctx_, conn_, "Templates.build", [this, context]() mutable {
      auto* r = &registry();
      auto params = context.getParams();
      const std::string name = whole_text(params.getName());
      std::shared_ptr<progress_relay> relay;
      if (params.hasProgress())
        relay = std::make_shared<progress_relay>(params.getProgress());
      auto sink = sink_of(relay);
      using built = result<templates::template_state>;
      return ctx_
        ->on_pool<built>(*ctx_->template_workers,
                         [r, who = asker(), name, sink = std::move(sink)] {
                           return r->build_stock(who, name, sink);
                         })
        .then([r, context, relay](std::shared_ptr<built> b) mutable {
          if (!*b)
            throw_error(b->err()); // the failed template's reason (its `failed` event says it too)
          fill_template(context.getResults().initTemplate(), b->value(),
                        r->users_of(b->value().id));
        });
    });
  }

  kj::Promise<void> delete_(DeleteContext context) override {
    return plain_call(*ctx_, conn_, "Templates.delete", [this, context]() mutable {
      auto* r = &registry();
      const std::string name = whole_text(context.getParams().getName());
      using removed = result<templates::template_state>;
      return ctx_
        ->on_pool<removed>(*ctx_->template_workers,
                           [r, who = asker(), name] { return r->remove(who, name); })
        .then([context](std::shared_ptr<removed> d) mutable {
          fill_template(context.getResults().initTemplate(), take(std::move(*d)), {});
        });
    });
  }

  kj::Promise<void> importArchive(ImportArchiveContext context) override {
    return plain_call(*ctx_, conn_, "Templates.importArchive", [this, context]() mutable {
      auto* r = &registry();
      auto params = context.getParams();
      templates::import_request req;
      req.name = whole_text(params.getName());
      req.scope = scope_of(params.getScope());
      req.format = params.getFormat() == rpc::ArchiveFormat::IMAGE
                     ? templates::archive_format::image
                     : templates::archive_format::rootfs;
      req.description = description_of(params.getDescription(), "an import's");
      // Refused at once, before a byte is sent: a bad or taken name, a global one without
      // admin, a tenant at its template quota (the import checks again when it starts).
      if (auto m = r->may_make(asker(), req.scope, req.name); !m)
        throw_error(m.err());
      context.getResults().setUpload(
        upload_to(params, [r, who = asker(), req = std::move(req)](
                            templates::chunk_source source, const templates::progress_sink& sink) {
          return r->import_archive(who, req, std::move(source), sink);
        }));
      return kj::READY_NOW;
    });
  }

  kj::Promise<void> buildSpec(BuildSpecContext context) override {
    return plain_call(*ctx_, conn_, "Templates.buildSpec", [this, context]() mutable {
      auto* r = &registry();
      auto params = context.getParams();
      templates::spec_request req;
      req.name = whole_text(params.getName());
      req.scope = scope_of(params.getScope());
      req.format = params.getFormat() == rpc::SpecFormat::DOCKERFILE
                     ? templates::spec_format::dockerfile
                     : templates::spec_format::toml;
      req.text = whole_text(params.getSpec());
      req.description = description_of(params.getDescription(), "a build's");
      if (req.text.size() > k_max_spec_bytes || !is_text(req.text))
        throw_error(errc::invalid_argument,
                    "a spec is at most 256 KiB of UTF-8 without NUL bytes; shorten it");
      // Refused at once, before the context is sent: a spec that does not parse, a bad or
      // taken name, a global one without admin (the build checks again when it starts).
      if (auto p = templates::parse_spec(req.format, req.text); !p)
        throw_error(p.err());
      if (auto m = r->may_make(asker(), req.scope, req.name); !m) // the quota too
        throw_error(m.err());
      context.getResults().setUpload(
        upload_to(params, [r, who = asker(), req = std::move(req)](
                            templates::chunk_source source, const templates::progress_sink& sink) {
          return r->build_spec(who, req, std::move(source), sink);
        }));
      return kj::READY_NOW;
    });
  }

private:
  static constexpr std::size_t k_max_spec_bytes = 256u << 10;

  // The upload of an import or a spec build: `work` runs on a template worker with the bytes
  // written to the upload as its source and the caller's progress sink (from `params`), and
  // the upload's commit answers what it made.
  template <class Params, class Work>
  rpc::TemplateUpload::Client upload_to(Params params, Work work) {
    auto pipe = std::make_shared<upload_pipe>();
    std::shared_ptr<progress_relay> relay;
    if (params.hasProgress())
      relay = std::make_shared<progress_relay>(params.getProgress());
    auto sink = sink_of(relay);
    auto done =
      ctx_
        ->on_pool<imported>(
          *ctx_->template_workers,
          [work = std::move(work), pipe, sink] {
            auto t = work(
              [pipe](const void** data, std::string* why) { return pipe->pull(data, why); }, sink);
            pipe->reader_done();
            return t;
          })
        .then([relay](std::shared_ptr<imported> t) { return t; }); // the relay lives until then
    return kj::heap<template_upload>(ctx_, pipe, kj::mv(done), &registry());
  }

  // The worker reaches the relay only through the loop, and holds no strong reference: the
  // relay is destroyed on the loop thread, after the answer.
  templates::progress_sink sink_of(const std::shared_ptr<progress_relay>& relay) const {
    if (!relay)
      return {};
    return [post = ctx_->bridge->poster(),
            weak = std::weak_ptr<progress_relay>(relay)](const templates::template_progress& p) {
      post([weak, p] {
        if (auto live = weak.lock())
          live->add(p);
      });
    };
  }
  templates::template_registry& registry() {
    if (!ctx_->options.templates)
      throw_error(errc::unavailable,
                  "this sandboxd has no templates (it runs only the hollow runtime); start it "
                  "with crun or runsc");
    return *ctx_->options.templates;
  }
  templates::asker asker() const {
    return {who_.tenant, who_.principal, who_.has_scope(k_scope_admin)};
  }

  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
  identity who_;
};

} // namespace

rpc::Templates::Client make_templates(std::shared_ptr<service_context> ctx,
                                      std::shared_ptr<connection_state> conn, identity who) {
  return kj::heap<template_service>(std::move(ctx), std::move(conn), std::move(who));
}

} // namespace sandboxd::api
