// sandbox_ops — the Sandbox capability's process and file calls (exec_service.cpp,
// file_service.cpp): each goes to the sandbox's actor through the control plane, which
// decides against the sandbox's state, has the driver do it and logs it; the answer is the
// driver's own (output, exit code, content, listing) or its error. Internal to api/.
#pragma once

#include "api/authenticator.hpp"
#include "api/service_context.hpp"

#include <memory>
#include <string>
#include <type_traits>

namespace sandboxd::api {

// The sandbox a capability names, and who holds it.
struct sandbox_ref {
  std::shared_ptr<service_context> ctx;
  std::shared_ptr<connection_state> conn;
  identity who;
  std::string id;

  actors::caller caller() const {
    return actors::caller{who.tenant, who.principal, ctx->correlation_id(*conn)};
  }
};

// A control-plane operation on the sandbox `s` as a kj promise. The sandbox is looked up
// first (service_context::query): a deleted, missing or other tenant's sandbox is the same
// NOT_FOUND for every call. Then `start` is called with the completion (and, when it takes
// one, the sandbox's state as the lookup saw it), which may run on
// any thread; the promise resolves on the loop. `start` is kept until then (capture by
// value).
template <class T, class Start>
kj::Promise<actors::op_result<T>> operation(const sandbox_ref& s, Start start) {
  s.ctx->admit_log(s.who.tenant);
  return s.ctx->query(s.id, s.who.tenant)
    .then([ctx = s.ctx, id = s.id, start = std::move(start)](actors::command_reply r) mutable {
      check(r);
      auto [promise, done] = ctx->bridge->template expect<actors::op_result<T>>();
      // A `start` that takes the sandbox's state too gets it as the lookup saw it.
      if constexpr (std::is_invocable_v<Start&, actors::op_done<T>, const actors::sandbox_state&>)
        start(actors::op_done<T>(std::move(done)), r.state);
      else
        start(actors::op_done<T>(std::move(done)));
      return promise.then([id](actors::op_result<T> r) {
        // Deleted between the lookup and the operation: still the one NOT_FOUND.
        if (r.failure && r.failure->code == errc::not_found &&
            r.failure->message.rfind("sandbox " + id + " was deleted", 0) == 0)
          r.failure->message = "sandbox " + id + " does not exist; check the sandbox id";
        return r;
      });
    });
}

// The value of an operation, or its failure thrown as the RPC error.
template <class T>
T take(actors::op_result<T>&& r) {
  if (r.failure)
    throw_error(*r.failure);
  return std::move(r.value);
}

// Ends a stream of writes to a client's sink (OutputSink, ByteSink) with its `done` call and
// resolves when it is answered: every write before it has then been delivered. A streaming
// call can be cancelled when its capability is released before it was answered; holding
// the sink until `done` returns prevents that. A client whose sink does not serve `done`
// (older clients), or whose sink has gone away, gets the stream ended all the same.
template <class Sink>
kj::Promise<void> end_stream(Sink& sink) {
  return sink.doneRequest().send().ignoreResult().catch_([](kj::Exception&&) {});
}

kj::Promise<void>
serve_exec(const sandbox_ref& s,
           capnp::CallContext<rpc::Sandbox::ExecParams, rpc::Sandbox::ExecResults> c);
kj::Promise<void>
serve_start(const sandbox_ref& s,
            capnp::CallContext<rpc::Sandbox::StartParams, rpc::Sandbox::StartResults> c);
kj::Promise<void>
serve_execs(const sandbox_ref& s,
            capnp::CallContext<rpc::Sandbox::ExecsParams, rpc::Sandbox::ExecsResults> c);
kj::Promise<void>
serve_open_exec(const sandbox_ref& s,
                capnp::CallContext<rpc::Sandbox::OpenExecParams, rpc::Sandbox::OpenExecResults> c);

kj::Promise<void>
serve_read_file(const sandbox_ref& s,
                capnp::CallContext<rpc::Sandbox::ReadFileParams, rpc::Sandbox::ReadFileResults> c);
kj::Promise<void> serve_write_file(
  const sandbox_ref& s,
  capnp::CallContext<rpc::Sandbox::WriteFileParams, rpc::Sandbox::WriteFileResults> c);
kj::Promise<void>
serve_list_dir(const sandbox_ref& s,
               capnp::CallContext<rpc::Sandbox::ListDirParams, rpc::Sandbox::ListDirResults> c);
kj::Promise<void>
serve_stat(const sandbox_ref& s,
           capnp::CallContext<rpc::Sandbox::StatParams, rpc::Sandbox::StatResults> c);
kj::Promise<void>
serve_make_dir(const sandbox_ref& s,
               capnp::CallContext<rpc::Sandbox::MakeDirParams, rpc::Sandbox::MakeDirResults> c);
kj::Promise<void>
serve_remove(const sandbox_ref& s,
             capnp::CallContext<rpc::Sandbox::RemoveParams, rpc::Sandbox::RemoveResults> c);
kj::Promise<void>
serve_rename(const sandbox_ref& s,
             capnp::CallContext<rpc::Sandbox::RenameParams, rpc::Sandbox::RenameResults> c);

} // namespace sandboxd::api
