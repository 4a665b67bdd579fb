// sandbox_service — the Sandbox capability: one sandbox of the session's tenant.
//
// Each call goes to the sandbox's actor (submit or query); one function per call talks to
// the control plane. The lifecycle calls are here; the process and file calls are in
// exec_service.cpp and file_service.cpp (sandbox_ops.hpp).
#include "api/sandbox_ops.hpp"
#include "api/snapshot_ops.hpp"

namespace sandboxd::api {
namespace {

class sandbox final : public rpc::Sandbox::Server {
public:
  sandbox(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn,
          identity who, std::string id)
      : ctx_(std::move(ctx)), conn_(std::move(conn)), who_(std::move(who)), id_(std::move(id)) {}

  kj::Promise<void> info(InfoContext context) override {
    return sandbox_call(*ctx_, conn_, "Sandbox.info", [this, context]() mutable {
      return ctx_->query(id_, who_.tenant).then([context](actors::command_reply r) mutable {
        check(r);
        fill(context.getResults().initInfo(), r.state);
      });
    });
  }

  kj::Promise<void> exec(ExecContext c) override { return serve_exec(ref(), c); }
  kj::Promise<void> start(StartContext c) override { return serve_start(ref(), c); }
  kj::Promise<void> execs(ExecsContext c) override { return serve_execs(ref(), c); }
  kj::Promise<void> openExec(OpenExecContext c) override { return serve_open_exec(ref(), c); }
  kj::Promise<void> readFile(ReadFileContext c) override { return serve_read_file(ref(), c); }
  kj::Promise<void> writeFile(WriteFileContext c) override { return serve_write_file(ref(), c); }
  kj::Promise<void> listDir(ListDirContext c) override { return serve_list_dir(ref(), c); }
  kj::Promise<void> stat(StatContext c) override { return serve_stat(ref(), c); }
  kj::Promise<void> makeDir(MakeDirContext c) override { return serve_make_dir(ref(), c); }
  kj::Promise<void> remove(RemoveContext c) override { return serve_remove(ref(), c); }
  kj::Promise<void> rename(RenameContext c) override { return serve_rename(ref(), c); }
  kj::Promise<void> snapshot(SnapshotContext c) override { return serve_snapshot(ref(), c); }

  kj::Promise<void> pause(PauseContext context) override {
    const auto mode = context.getParams().getMode() == schema::PauseMode::MEMORY
                        ? events::pause_mode::memory
                        : events::pause_mode::filesystem;
    return command("Sandbox.pause", context, actors::cmd::pause{mode, events::pause_reason::user});
  }

  kj::Promise<void> resume(ResumeContext context) override {
    return command("Sandbox.resume", context, actors::cmd::resume{});
  }

  kj::Promise<void> delete_(DeleteContext) override {
    return sandbox_call(*ctx_, conn_, "Sandbox.delete", [this]() {
      return existing()
        .then([ctx = ctx_, self = this](actors::command_reply) {
          return ctx->submit(self->id_, self->command_of(actors::cmd::remove{}),
                             actors::reply_when::settled);
        })
        .then([](actors::command_reply r) { check(r); });
    });
  }

  kj::Promise<void> setTimeouts(SetTimeoutsContext context) override {
    // The command takes the complete settings: read the current ones from the actor, apply
    // the request, then set. (A set by another client in between is overwritten.)
    return sandbox_call(*ctx_, conn_, "Sandbox.setTimeouts", [this, context]() mutable {
      ctx_->admit_log(who_.tenant);
      return ctx_->query(id_, who_.tenant)
        .then([ctx = ctx_, self = this, context](actors::command_reply r) mutable {
          check(r);
          const auto now =
            std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
          auto t = take(timeouts_of(context.getParams().getTimeouts(), r.state.spec.timeouts,
                                    r.state.created_at, now));
          return ctx->submit(self->id_, self->command_of(actors::cmd::set_timeout{t}),
                             actors::reply_when::durable);
        })
        .then([context](actors::command_reply r) mutable {
          check(r);
          fill(context.getResults().initInfo(), r.state);
        });
    });
  }

  kj::Promise<void> watch(WatchContext context) override {
    return sandbox_call(*ctx_, conn_, "Sandbox.watch", [this, context]() mutable {
      return ctx_->query(id_, who_.tenant)
        .then([ctx = ctx_, conn = conn_, id = id_, context](actors::command_reply r) mutable {
          check(r);
          auto params = context.getParams();
          context.getResults().setHandle(
            start_watch(ctx, conn, id, params.getFromSequence(), params.getSink()));
        });
    });
  }

private:
  actors::command command_of(actors::command_body body) {
    actors::command c;
    c.tenant = who_.tenant;
    c.principal = who_.principal;
    c.correlation_id = ctx_->correlation_id(*conn_);
    c.body = std::move(body);
    return c;
  }

  // The sandbox's state; NOT_FOUND once it is deleted (a command would be CONFLICT there).
  kj::Promise<actors::command_reply> existing() {
    return ctx_->query(id_, who_.tenant).then([](actors::command_reply r) {
      check(r);
      return r;
    });
  }

  // A lifecycle command, answered with the sandbox's info once it settled.
  template <class Context>
  kj::Promise<void> command(const char* method, Context context, actors::command_body body) {
    return sandbox_call(*ctx_, conn_, method, [this, context, body = std::move(body)]() mutable {
      ctx_->admit_log(who_.tenant);
      return existing()
        .then([ctx = ctx_, self = this, body = std::move(body)](actors::command_reply) mutable {
          return ctx->submit(self->id_, self->command_of(std::move(body)),
                             actors::reply_when::settled);
        })
        .then([context](actors::command_reply r) mutable {
          check(r);
          fill(context.getResults().initInfo(), r.state);
        });
    });
  }

  sandbox_ref ref() const { return sandbox_ref{ctx_, conn_, who_, id_}; }

  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
  identity who_;
  std::string id_;
};

} // namespace

rpc::Sandbox::Client make_sandbox(std::shared_ptr<service_context> ctx,
                                  std::shared_ptr<connection_state> conn, identity who,
                                  std::string sandbox_id) {
  return kj::heap<sandbox>(std::move(ctx), std::move(conn), std::move(who), std::move(sandbox_id));
}

} // namespace sandboxd::api
