// session_service — a tenant's Session: create, get, list and open sandboxes, and the
// Admin capability for tokens with the admin scope.
#include "api/convert.hpp"
#include "api/service_context.hpp"
#include "api/snapshot_ops.hpp"
#include "base/utf8.hpp"
#include "templates/template_registry.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <mutex>
#include <random>

namespace sandboxd::api {
namespace {

// The code of a failed runtime step from its reason, "<step> failed (<code>): <message>"
// (actors/runtime_steps.cpp); internal when it names none.
errc runtime_code_of(const std::string& reason) {
  const auto at = reason.find(" failed (");
  if (at == std::string::npos)
    return errc::internal;
  const auto from = at + 9;
  const auto to = reason.find(')', from);
  if (to == std::string::npos)
    return errc::internal;
  return parse_errc(std::string_view(reason).substr(from, to - from)).value_or(errc::internal);
}

// A new sandbox id, chosen here so that the create's quota reservation names it from the
// start (tenant_ledger.hpp). Same form as the actors' own ids: "sb-" and 12 hex digits.
std::string new_sandbox_id(const tenant_ledger& ledger) {
  static constexpr char k_hex[] = "0123456789abcdef";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  for (;;) {
    auto bits = rng();
    std::string id = "sb-";
    for (int i = 0; i < 12; ++i, bits >>= 4)
      id.push_back(k_hex[bits & 15]);
    if (!ledger.knows(id))
      return id;
  }
}

// A stock template's first build, in the daemon's log: each phase once, its progress at most
// every five seconds.
templates::progress_sink log_progress(const std::string& name) {
  struct last_seen {
    std::mutex mu;
    std::string phase;
    std::chrono::steady_clock::time_point at{};
  };
  auto seen = std::make_shared<last_seen>();
  return [seen, name](const templates::template_progress& p) {
    std::lock_guard<std::mutex> g(seen->mu);
    const auto now = std::chrono::steady_clock::now();
    if (p.phase == seen->phase && now - seen->at < std::chrono::seconds(5))
      return;
    seen->phase = p.phase;
    seen->at = now;
    if (p.fraction >= 0)
      spdlog::info("template {}: {} ({:.0f}%)", name, p.phase, 100 * p.fraction);
    else
      spdlog::info("template {}: {}", name, p.phase);
  };
}

void fill_summary(rpc::SandboxSummary::Builder out, const sandbox_summary& s) {
  out.setId(s.id);
  out.setState(state_of(s.state).value_or(rpc::SandboxState::FAILED));
  out.setTemplate(s.template_name);
  auto l = out.initLimits();
  l.setMemoryMib(s.limits.memory_mib);
  l.setCpuMillicores(s.limits.cpu_millicores);
  l.setPids(s.limits.pids);
  l.setDiskMib(s.limits.disk_mib);
  auto labels = out.initLabels(static_cast<unsigned>(s.labels.size()));
  for (unsigned i = 0; i < s.labels.size(); ++i) {
    labels[i].setKey(s.labels[i].key);
    labels[i].setValue(s.labels[i].value);
  }
  out.setPauseMode(s.pause_mode == "memory" ? schema::PauseMode::MEMORY
                                            : schema::PauseMode::FILESYSTEM);
  out.setWritableBytes(s.writable_bytes);
  out.setCreatedAtNs(s.created_at_ns);
  out.setUpdatedAtNs(s.updated_at_ns);
  out.setSequence(s.sequence);
}

using create_context = capnp::CallContext<rpc::Session::CreateParams, rpc::Session::CreateResults>;

// A create's reply, a sandbox made (cold) or claimed (from a pool): its failure or failed
// state as the create's error, else the results.
void answer_create(const std::shared_ptr<service_context>& ctx,
                   const std::shared_ptr<connection_state>& conn, const identity& who,
                   create_context& context, const actors::command_reply& r, bool from_pool) {
  check(r);
  if (r.state.status == actors::sandbox_status::failed)
    throw_error(runtime_code_of(r.state.failure_reason),
                "sandbox " + r.state.sandbox_id +
                  " could not be created: " + r.state.failure_reason +
                  " (it is kept in state failed for inspection; delete it)");
  auto results = context.getResults();
  fill(results.initInfo(), r.state);
  results.setSandbox(make_sandbox(ctx, conn, who, r.state.sandbox_id));
  results.setFromPool(from_pool);
}

// Submits the create of sandbox `id`; `hold` (may be null) keeps its template until the reply.
kj::Promise<void> submit_create(std::shared_ptr<service_context> ctx,
                                std::shared_ptr<connection_state> conn, identity who,
                                create_context context, events::created spec, const std::string& id,
                                std::shared_ptr<templates::template_hold> hold) {
  if (hold)
    spec.content = hold->ref();
  actors::command c;
  c.tenant = who.tenant;
  c.principal = who.principal;
  c.correlation_id = ctx->correlation_id(*conn);
  c.body = actors::cmd::create{std::move(spec)};
  return ctx->submit(id, std::move(c), actors::reply_when::settled)
    .then([ctx, conn, who, context, id, hold = std::move(hold)](actors::command_reply r) mutable {
      // A failed create made no sandbox; a retried one answers another sandbox (the one
      // its client request id made), so this reservation was never needed.
      if (!r.ok() || r.state.sandbox_id != id)
        ctx->ledger->release(id);
      answer_create(ctx, conn, who, context, r, false);
    });
}

// A create served from a warm pool (docs/pools.md) when the pool of its key has a ready
// sandbox of the template content it would get: the quota reservation of `id` moves to that
// sandbox and the create's settings go to it as a claim. A pool with nothing ready, or a
// claim the sandbox refuses (it is no longer claimable), makes it cold after all.
kj::Promise<void> create_from_pool(std::shared_ptr<service_context> ctx,
                                   std::shared_ptr<connection_state> conn, identity who,
                                   create_context context, events::created spec,
                                   const std::string& id,
                                   std::shared_ptr<templates::template_hold> hold) {
  const auto key = actors::key_of(spec);
  const std::string content = hold ? hold->ref().id : std::string();
  auto [taken, done] = ctx->bridge->expect<std::optional<std::string>>();
  ctx->plane->take_from_pool(key, content, std::move(done));
  return taken.then([ctx, conn, who, context, spec = std::move(spec), id, hold, key,
                     content](std::optional<std::string> pooled) mutable -> kj::Promise<void> {
    if (!pooled)
      return submit_create(ctx, conn, who, context, std::move(spec), id, std::move(hold));
    const std::string sandbox = *pooled;
    ctx->ledger->rename(id, sandbox);
    actors::command c;
    c.tenant = who.tenant;
    c.principal = who.principal;
    c.correlation_id = ctx->correlation_id(*conn);
    c.body = actors::cmd::claim{
      events::claim_requested{spec.labels, spec.env, spec.timeouts, spec.client_request_id}};
    return ctx->submit(sandbox, std::move(c), actors::reply_when::settled)
      .then([ctx, conn, who, context, spec = std::move(spec), id, hold = std::move(hold), key,
             content, sandbox](actors::command_reply r) mutable -> kj::Promise<void> {
        if (!r.ok()) {
          // Refused (the sandbox died or went meanwhile): never the tenant's; made cold.
          ctx->ledger->rename(sandbox, id);
          ctx->plane->return_to_pool(key, sandbox, content, true);
          return submit_create(ctx, conn, who, context, std::move(spec), id, std::move(hold));
        }
        if (r.state.sandbox_id != sandbox) {
          // A retried create: its client request id names the sandbox the first one made.
          ctx->ledger->release(sandbox);
          ctx->plane->return_to_pool(key, sandbox, content, false);
        }
        answer_create(ctx, conn, who, context, r, r.state.sandbox_id == sandbox);
        return kj::READY_NOW;
      });
  });
}

// A create: from a warm pool unless the request says no, else cold.
kj::Promise<void> make_sandbox_for(std::shared_ptr<service_context> ctx,
                                   std::shared_ptr<connection_state> conn, identity who,
                                   create_context context, events::created spec,
                                   const std::string& id,
                                   std::shared_ptr<templates::template_hold> hold, bool pooled) {
  if (pooled && ctx->plane)
    return create_from_pool(std::move(ctx), std::move(conn), std::move(who), context,
                            std::move(spec), id, std::move(hold));
  return submit_create(std::move(ctx), std::move(conn), std::move(who), context, std::move(spec),
                       id, std::move(hold));
}

class session final : public rpc::Session::Server {
public:
  session(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn,
          identity who)
      : ctx_(std::move(ctx)), conn_(std::move(conn)), who_(std::move(who)) {}

  kj::Promise<void> create(CreateContext context) override {
    return plain_call(
      *ctx_, conn_, "Session.create", [this, context]() mutable -> kj::Promise<void> {
        auto& ctx = *ctx_;
        auto request = context.getParams().getRequest();
        auto spec = take(created_of(request, ctx.options.defaults));
        const bool fork = request.hasFromSnapshot() && request.getFromSnapshot().size() > 0;
        if (fork) // before anything is reserved: a refusal holds nothing
          apply_fork(ctx, who_, request, spec);
        // A fork is made cold: no pool holds its snapshot's layer.
        const bool pooled = !request.getNoPool() && !fork;
        check_result(
          network_within_ceiling(spec.network, ctx.network_ceiling_of(who_.tenant), who_.tenant));
        ctx.admit_log(who_.tenant);
        auto id = new_sandbox_id(*ctx.ledger);
        check_result(ctx.ledger->reserve(who_.tenant, id, spec.limits, ctx.quota_of(who_.tenant)));
        auto* registry = ctx.options.templates;
        // A fork starts on the exact template content of its snapshot's sandbox (apply_fork).
        if (registry == nullptr || spec.runtime == events::runtime_kind::hollow || fork)
          return make_sandbox_for(ctx_, conn_, who_, context, std::move(spec), id, nullptr, pooled);
        // The template, held until the sandbox's `created` is durable: its content goes into
        // that event, and it cannot be deleted meanwhile.
        const templates::asker who{who_.tenant, who_.principal, who_.has_scope("admin")};
        auto ready = registry->acquire_ready(who, spec.template_name);
        if (!ready) {
          ctx.ledger->release(id);
          throw_error(ready.err());
        }
        if (ready.value())
          return make_sandbox_for(ctx_, conn_, who_, context, std::move(spec), id,
                                  std::move(ready).value(), pooled);
        // A stock template's first use: built now (minutes), off the loop and the workers.
        using acquired = result<std::shared_ptr<templates::template_hold>>;
        auto name = spec.template_name;
        return ctx
          .on_pool<acquired>(
            *ctx.template_workers,
            [registry, who, name] { return registry->acquire(who, name, log_progress(name)); })
          .then([ctx = ctx_, conn = conn_, who = who_, context, spec = std::move(spec), id,
                 pooled](std::shared_ptr<acquired> held) mutable -> kj::Promise<void> {
            if (!*held) {
              ctx->ledger->release(id);
              throw_error(held->err());
            }
            return make_sandbox_for(ctx, conn, who, context, std::move(spec), id,
                                    std::move(*held).value(), pooled);
          });
      });
  }

  kj::Promise<void> get(GetContext context) override {
    return sandbox_call(*ctx_, conn_, "Session.get", [this, context]() mutable {
      return ctx_->query(context.getParams().getSandboxId(), who_.tenant)
        .then([context](actors::command_reply r) mutable {
          check(r);
          fill(context.getResults().initInfo(), r.state);
        });
    });
  }

  kj::Promise<void> open(OpenContext context) override {
    return sandbox_call(*ctx_, conn_, "Session.open", [this, context]() mutable {
      return ctx_->query(context.getParams().getSandboxId(), who_.tenant)
        .then([ctx = ctx_, conn = conn_, who = who_, context](actors::command_reply r) mutable {
          check(r);
          context.getResults().setSandbox(make_sandbox(ctx, conn, who, r.state.sandbox_id));
        });
    });
  }

  kj::Promise<void> redact(RedactContext context) override {
    return plain_call(
      *ctx_, conn_, "Session.redact", [this, context]() mutable -> kj::Promise<void> {
        auto params = context.getParams();
        std::string id = whole_text(params.getSandboxId());
        std::string reason = whole_text(params.getReason());
        if (id.empty())
          throw_error(errc::invalid_argument, "redact needs a sandbox id");
        if (!is_text(reason))
          throw_error(errc::invalid_argument,
                      "the redaction reason holds a NUL byte or is not UTF-8; give UTF-8 text");
        if (reason.size() > 1024)
          throw_error(errc::invalid_argument,
                      "the redaction reason is " + std::to_string(reason.size()) +
                        " bytes; give at most 1024 (a ticket or request id)");
        actors::command c;
        c.tenant = who_.tenant;
        c.principal = who_.principal;
        c.correlation_id = ctx_->correlation_id(*conn_);
        c.body = actors::cmd::redact{std::move(reason)};
        return ctx_->submit(id, std::move(c), actors::reply_when::durable)
          .then([](actors::command_reply r) { check(r); });
      });
  }

  kj::Promise<void> list(ListContext context) override {
    return plain_call(*ctx_, conn_, "Session.list", [this, context]() mutable -> kj::Promise<void> {
      auto& ctx = *ctx_;
      if (!ctx.store)
        throw_error(errc::unavailable,
                    "list is served from the read models and this sandboxd has none; get a "
                    "sandbox by id instead");
      auto params = context.getParams();
      list_filter q;
      for (auto s : params.getFilter().getStates())
        q.states.emplace_back(name_of(s));
      for (auto l : params.getFilter().getLabels())
        q.labels.push_back({whole_text(l.getKey()), whole_text(l.getValue())});
      q.include_deleted = params.getFilter().getIncludeDeleted();
      q.page_token = whole_text(params.getPageToken());
      q.limit = params.getLimit();
      auto* store = ctx.store;
      return ctx
        .on_worker<result<list_page>>(
          [store, tenant = who_.tenant, q = std::move(q)] { return store->list(tenant, q); })
        .then([context](std::shared_ptr<result<list_page>> page) mutable {
          auto p = take(std::move(*page));
          auto results = context.getResults();
          auto rows = results.initSandboxes(static_cast<unsigned>(p.rows.size()));
          for (unsigned i = 0; i < p.rows.size(); ++i)
            fill_summary(rows[i], p.rows[i]);
          results.setNextPageToken(p.next_page_token);
        });
    });
  }

  kj::Promise<void> admin(AdminContext context) override {
    if (!who_.has_scope(k_scope_admin))
      throw_error(errc::permission_denied,
                  "principal " + who_.principal + " of tenant " + who_.tenant +
                    " has no admin scope; use a token with the admin scope");
    context.getResults().setAdmin(make_admin(ctx_, conn_, who_));
    return kj::READY_NOW;
  }

  kj::Promise<void> listSnapshots(ListSnapshotsContext c) override {
    return serve_list_snapshots(ctx_, conn_, who_, c);
  }
  kj::Promise<void> getSnapshot(GetSnapshotContext c) override {
    return serve_get_snapshot(ctx_, conn_, who_, c);
  }
  kj::Promise<void> deleteSnapshot(DeleteSnapshotContext c) override {
    return serve_delete_snapshot(ctx_, conn_, who_, c);
  }

  kj::Promise<void> templates(TemplatesContext context) override {
    context.getResults().setTemplates(make_templates(ctx_, conn_, who_));
    return kj::READY_NOW;
  }

private:
  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
  identity who_;
};

} // namespace

rpc::Session::Client make_session(std::shared_ptr<service_context> ctx,
                                  std::shared_ptr<connection_state> conn, identity who) {
  return kj::heap<session>(std::move(ctx), std::move(conn), std::move(who));
}

} // namespace sandboxd::api
