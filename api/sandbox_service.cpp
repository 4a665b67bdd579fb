// sandbox_service — the Sandbox capability: one sandbox of the session's tenant.
//
// Each call goes to the sandbox's actor (submit or query); one function per call talks to
// the control plane. The calls the control plane cannot answer truthfully yet (exec with
// its output and result, the file calls with their content) check that the sandbox still
// exists and then answer UNAVAILABLE: they never invent output or content.
#include "api/service_context.hpp"

namespace sandboxd::api {
namespace {

class sandbox final : public rpc::Sandbox::Server {
public:
  sandbox(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn,
          identity who, std::string id)
      : ctx_(std::move(ctx)), conn_(std::move(conn)), who_(std::move(who)), id_(std::move(id)) {}

  kj::Promise<void> info(InfoContext context) override {
    return sandbox_call(*ctx_, conn_, [this, context]() mutable {
      return ctx_->query(id_, who_.tenant).then([context](actors::command_reply r) mutable {
        check(r);
        fill(context.getResults().initInfo(), r.state);
      });
    });
  }

  kj::Promise<void> exec(ExecContext) override { return not_served("exec"); }
  kj::Promise<void> start(StartContext) override { return not_served("start"); }
  kj::Promise<void> execs(ExecsContext) override { return not_served("execs"); }
  kj::Promise<void> openExec(OpenExecContext) override { return not_served("openExec"); }
  kj::Promise<void> readFile(ReadFileContext) override { return not_served("readFile"); }
  kj::Promise<void> writeFile(WriteFileContext) override { return not_served("writeFile"); }
  kj::Promise<void> listDir(ListDirContext) override { return not_served("listDir"); }
  kj::Promise<void> stat(StatContext) override { return not_served("stat"); }
  kj::Promise<void> makeDir(MakeDirContext) override { return not_served("makeDir"); }
  kj::Promise<void> remove(RemoveContext) override { return not_served("remove"); }
  kj::Promise<void> rename(RenameContext) override { return not_served("rename"); }

  kj::Promise<void> pause(PauseContext context) override {
    const auto mode = context.getParams().getMode() == schema::PauseMode::MEMORY
                        ? events::pause_mode::memory
                        : events::pause_mode::filesystem;
    return command(context, actors::cmd::pause{mode, events::pause_reason::user});
  }

  kj::Promise<void> resume(ResumeContext context) override {
    return command(context, actors::cmd::resume{});
  }

  kj::Promise<void> delete_(DeleteContext) override {
    return sandbox_call(*ctx_, conn_, [this]() {
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
    return sandbox_call(*ctx_, conn_, [this, context]() mutable {
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
    return sandbox_call(*ctx_, conn_, [this, context]() mutable {
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
  kj::Promise<void> command(Context context, actors::command_body body) {
    return sandbox_call(*ctx_, conn_, [this, context, body = std::move(body)]() mutable {
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

  kj::Promise<void> not_served(const char* call) {
    return sandbox_call(*ctx_, conn_, [this, call]() {
      return ctx_->query(id_, who_.tenant).then([call](actors::command_reply r) {
        check(r);
        throw_error(errc::unavailable,
                    std::string(call) +
                      " is not served by this build of sandboxd: the control plane does not "
                      "yet return its result; upgrade sandboxd to use it");
      });
    });
  }

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
