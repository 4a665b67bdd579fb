// snapshot_service — the snapshot calls of the Session and Sandbox capabilities
// (snapshot_ops.hpp).
#include "api/convert.hpp"
#include "api/snapshot_ops.hpp"
#include "base/snapshot_id.hpp"
#include "base/utf8.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace sandboxd::api {
namespace {

// A fresh id no snapshot of this node had: snap- and 16 random hex digits.
std::string new_snapshot_id(const snapshot_registry& r) {
  static std::mt19937_64 rng{std::random_device{}() ^
                             (std::uint64_t{std::random_device{}()} << 32)};
  static std::mutex mu;
  for (;;) {
    std::uint64_t v;
    {
      std::lock_guard l(mu);
      v = rng();
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "snap-%016llx", static_cast<unsigned long long>(v));
    if (!r.knows(buf))
      return buf;
  }
}

std::string snapshot_id_of(capnp::Text::Reader t) {
  std::string id = whole_text(t);
  if (!is_snapshot_id(id))
    throw_error(errc::invalid_argument,
                "snapshot id \"" + text_of(id.substr(0, 80)) +
                  "\" is not one sandboxd makes (snap- and 16 hex digits); list snapshots");
  return id;
}

snapshot_entry owned(service_context& ctx, const identity& who, const std::string& id) {
  auto e = ctx.snapshots->get(who.tenant, id);
  if (!e)
    throw_error(errc::not_found,
                "snapshot " + id + " does not exist; list snapshots to find yours");
  return *e;
}

void fill_snapshot(rpc::SnapshotInfo::Builder out, const snapshot_entry& e) {
  out.setId(e.snapshot_id);
  out.setName(e.name);
  out.setSandboxId(e.sandbox_id);
  out.setTakenAtNs(e.taken_at.time_since_epoch().count());
  out.setTemplate(e.source.template_name);
  out.setRuntime(events::to_string(e.source.runtime));
  out.setLayerBytes(e.layer_bytes);
  out.setReferencedBytes(e.referenced_bytes);
  out.setExclusiveBytes(e.exclusive_bytes);
  out.setSequence(e.sequence);
}

} // namespace

kj::Promise<void>
serve_snapshot(const sandbox_ref& s,
               capnp::CallContext<rpc::Sandbox::SnapshotParams, rpc::Sandbox::SnapshotResults> c) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.snapshot", [s, c]() mutable {
    std::string name = whole_text(c.getParams().getName());
    if (name.size() > 128 || !is_text(name))
      throw_error(errc::invalid_argument,
                  "a snapshot name is at most 128 bytes of UTF-8 text; give a shorter one");
    auto* registry = s.ctx->snapshots;
    const std::string snap = new_snapshot_id(*registry);
    const std::uint64_t quota = s.ctx->quota_of(s.who.tenant).snapshots;
    return operation<events::snapshot_taken>(
             s,
             [s, snap, name, quota, registry](actors::op_done<events::snapshot_taken> done) {
               // Reserved once the sandbox is known to be the caller's; released below if
               // it was not taken.
               if (auto r = registry->reserve(s.who.tenant, snap, quota); !r) {
                 actors::op_result<events::snapshot_taken> f;
                 f.failure = r.err();
                 done(std::move(f));
                 return;
               }
               s.ctx->plane->snapshot(s.id, s.caller(), snap, name, std::move(done));
             })
      .then(
        [s, snap, c](actors::op_result<events::snapshot_taken> r) mutable {
          auto* registry = s.ctx->snapshots;
          if (r.failure) {
            registry->release(snap);
            throw_error(*r.failure);
          }
          const auto now =
            std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
          registry->taken(s.who.tenant, s.id, r.value, now, r.own_sequence);
          fill_snapshot(c.getResults().initSnapshot(), owned(*s.ctx, s.who, snap));
        },
        [s, snap](kj::Exception&& e) -> void {
          s.ctx->snapshots->release(snap); // the lookup failed: nothing was asked of the plane
          kj::throwFatalException(kj::mv(e));
        });
  });
}

kj::Promise<void> serve_list_snapshots(
  std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who,
  capnp::CallContext<rpc::Session::ListSnapshotsParams, rpc::Session::ListSnapshotsResults> c) {
  return plain_call(*ctx, conn, "Session.listSnapshots", [ctx, who, c]() mutable {
    const std::string sandbox = whole_text(c.getParams().getSandboxId());
    auto all = ctx->snapshots->list(who.tenant, sandbox);
    auto out = c.getResults().initSnapshots(static_cast<unsigned>(all.size()));
    for (unsigned i = 0; i < all.size(); ++i)
      fill_snapshot(out[i], all[i]);
    return kj::Promise<void>(kj::READY_NOW);
  });
}

kj::Promise<void> serve_get_snapshot(
  std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who,
  capnp::CallContext<rpc::Session::GetSnapshotParams, rpc::Session::GetSnapshotResults> c) {
  return plain_call(*ctx, conn, "Session.getSnapshot", [ctx, who, c]() mutable {
    auto id = snapshot_id_of(c.getParams().getSnapshotId());
    fill_snapshot(c.getResults().initSnapshot(), owned(*ctx, who, id));
    return kj::Promise<void>(kj::READY_NOW);
  });
}

kj::Promise<void> serve_delete_snapshot(
  std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who,
  capnp::CallContext<rpc::Session::DeleteSnapshotParams, rpc::Session::DeleteSnapshotResults> c) {
  return plain_call(*ctx, conn, "Session.deleteSnapshot", [ctx, conn, who, c]() mutable {
    auto id = snapshot_id_of(c.getParams().getSnapshotId());
    auto e = owned(*ctx, who, id);
    auto [promise, done] = ctx->bridge->expect<actors::op_result<events::snapshot_deleted>>();
    actors::caller by{who.tenant, who.principal, ctx->correlation_id(*conn)};
    ctx->plane->delete_snapshot(e.sandbox_id, by, id,
                                actors::op_done<events::snapshot_deleted>(std::move(done)));
    return promise.then([ctx, id](actors::op_result<events::snapshot_deleted> r) {
      if (r.failure && r.own_sequence == 0)
        throw_error(*r.failure); // not logged: the snapshot is still there
      // Logged: the snapshot is gone for everyone, whatever the removal of its subvolume
      // answered (a failed removal leaves blocks the next start's sweep frees).
      ctx->snapshots->deleted(id);
    });
  });
}

void apply_fork(service_context& ctx, const identity& who, rpc::CreateRequest::Reader r,
                events::created& spec) {
  auto id = snapshot_id_of(r.getFromSnapshot());
  auto e = owned(ctx, who, id);
  const std::string asked_template = whole_text(r.getTemplate());
  if (!asked_template.empty() && asked_template != e.source.template_name)
    throw_error(errc::invalid_argument,
                "snapshot " + id + " is of a sandbox on template " + e.source.template_name +
                  ", not " + text_of(asked_template) + "; leave the template out of a fork");
  const std::string asked_runtime = whole_text(r.getRuntime());
  if (!asked_runtime.empty() && asked_runtime != events::to_string(e.source.runtime))
    throw_error(errc::invalid_argument,
                "snapshot " + id + " is on runtime " + events::to_string(e.source.runtime) +
                  ", not " + text_of(asked_runtime) + "; a fork runs where its snapshot is");
  spec.template_name = e.source.template_name;
  spec.runtime = e.source.runtime;
  spec.content = e.source.content;
  spec.from_snapshot = id;
}

} // namespace sandboxd::api
