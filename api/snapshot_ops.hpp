// snapshot_ops — the API's snapshot calls (snapshot_service.cpp, docs/snapshots.md):
// Sandbox.snapshot, Session.listSnapshots/getSnapshot/deleteSnapshot and a create's
// fromSnapshot (a fork). Every lookup is by the caller's tenant in the snapshot registry
// (snapshot_registry.hpp): another tenant's snapshot is the same NOT_FOUND as a missing one,
// and an id that is not snap- and 16 hex digits is INVALID_ARGUMENT before anything is looked
// up. Internal to api/.
#pragma once

#include "api/sandbox_ops.hpp"

namespace sandboxd::api {

kj::Promise<void>
serve_snapshot(const sandbox_ref& s,
               capnp::CallContext<rpc::Sandbox::SnapshotParams, rpc::Sandbox::SnapshotResults> c);

kj::Promise<void> serve_list_snapshots(
  std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who,
  capnp::CallContext<rpc::Session::ListSnapshotsParams, rpc::Session::ListSnapshotsResults> c);
kj::Promise<void> serve_get_snapshot(
  std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who,
  capnp::CallContext<rpc::Session::GetSnapshotParams, rpc::Session::GetSnapshotResults> c);
kj::Promise<void> serve_delete_snapshot(
  std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn, identity who,
  capnp::CallContext<rpc::Session::DeleteSnapshotParams, rpc::Session::DeleteSnapshotResults> c);

// A create with fromSnapshot: `spec` gets the snapshot's template (its exact content) and
// runtime and the snapshot's id; throws INVALID_ARGUMENT when the request names another
// template or runtime, NOT_FOUND when the tenant holds no such snapshot.
void apply_fork(service_context& ctx, const identity& who, rpc::CreateRequest::Reader r,
                events::created& spec);

} // namespace sandboxd::api
