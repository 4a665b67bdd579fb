// exec_service — Sandbox.exec/start/execs/openExec and the Exec capability.
//
// Output travels from the pool thread running the exec to the client's OutputSink through
// an output_queue holding at most `output_window_bytes`: when the client reads slower than
// the process writes, the pool thread waits (the process's pipe fills and it blocks), the
// daemon's memory does not grow. The loop side (output_sender) sends the queued chunks in
// order, one Cap'n Proto streaming call at a time; it is dropped with the call or handle
// that owns it, which closes the queue so a waiting pool thread goes on (its output is then
// only counted). Streamed stdin (start with streamStdin) goes the other way through a
// stdin_queue of the same bound.
// GCC 12 reports the optional<error> inside kj::ExceptionOr<op_result<T>> as maybe
// uninitialized when it is moved; it is always initialized (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "api/convert.hpp"
#include "api/sandbox_ops.hpp"

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>

namespace sandboxd::api {
namespace {

using poster_fn = std::function<void(std::function<void()>)>;

// The bytes between an exec's pool thread and the loop. Thread-safe.
struct output_queue {
  std::mutex mu;
  std::condition_variable room;
  std::deque<std::pair<runtime::output_stream, std::string>> chunks;
  std::size_t bytes = 0;
  bool closed = false;   // the sender is gone: drop what comes
  bool finished = false; // the exec ended: nothing more comes
  bool wake_wanted = false;
};

// Loop thread only. Sends the queue's chunks to the client's sink, in order.
class output_sender {
public:
  output_sender(rpc::OutputSink::Client sink, std::shared_ptr<output_queue> q)
      : sink_(kj::mv(sink)), q_(std::move(q)) {}
  ~output_sender() {
    {
      std::lock_guard l(q_->mu);
      q_->closed = true;
      q_->chunks.clear();
      q_->bytes = 0;
    }
    q_->room.notify_all();
  }

  // Resolves once every chunk is sent and the sink has answered `done` after the exec
  // finished, or the sink failed.
  kj::Promise<void> run() {
    std::pair<runtime::output_stream, std::string> chunk;
    {
      std::lock_guard l(q_->mu);
      if (q_->chunks.empty()) {
        if (q_->closed)
          return kj::READY_NOW;
        if (q_->finished)
          return end_stream(sink_);
        auto paf = kj::newPromiseAndFulfiller<void>();
        wake_ = kj::mv(paf.fulfiller);
        q_->wake_wanted = true;
        return paf.promise.then([this] { return run(); });
      }
      chunk = std::move(q_->chunks.front());
      q_->chunks.pop_front();
    }
    const std::size_t n = chunk.second.size();
    auto req = sink_.writeRequest();
    req.setStream(chunk.first == runtime::output_stream::out ? rpc::OutputStream::STDOUT
                                                             : rpc::OutputStream::STDERR);
    req.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(chunk.second.data()), n));
    return req.send().then(
      [this, n] {
        {
          std::lock_guard l(q_->mu);
          q_->bytes -= n;
        }
        q_->room.notify_all();
        return run();
      },
      [this](kj::Exception&&) {
        // The client's sink is gone: the exec goes on, its output is only counted.
        std::lock_guard l(q_->mu);
        q_->closed = true;
        q_->chunks.clear();
        q_->bytes = 0;
        q_->room.notify_all();
      });
  }

  // On the loop, after a post from the pool thread.
  void wake() {
    KJ_IF_MAYBE (w, wake_) {
      auto f = kj::mv(*w);
      wake_ = nullptr;
      f->fulfill();
    }
  }

  // On the loop: the exec ended (its result arrived; every chunk was queued before it).
  void finish() {
    {
      std::lock_guard l(q_->mu);
      q_->finished = true;
    }
    wake();
  }

private:
  rpc::OutputSink::Client sink_;
  std::shared_ptr<output_queue> q_;
  kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> wake_;
};

// An output sender with its run() in progress, and the control plane's sink that feeds it.
struct output_pipe {
  std::shared_ptr<output_sender> sender;
  kj::Promise<void> sent = nullptr;
  actors::output_sink sink;
};

output_pipe make_output_pipe(service_context& ctx, rpc::OutputSink::Client client) {
  auto q = std::make_shared<output_queue>();
  output_pipe p;
  p.sender = std::make_shared<output_sender>(kj::mv(client), q);
  p.sent = p.sender->run().eagerlyEvaluate(nullptr);
  const std::size_t window = std::max<std::size_t>(ctx.options.output_window_bytes, 1);
  std::weak_ptr<output_sender> weak = p.sender;
  p.sink = [q, window, weak, post = ctx.bridge->poster()](runtime::output_stream s,
                                                          std::string_view data) {
    std::unique_lock l(q->mu);
    q->room.wait(l, [&] { return q->closed || q->bytes < window; });
    if (q->closed)
      return;
    q->chunks.emplace_back(s, std::string(data));
    q->bytes += data.size();
    if (q->wake_wanted) {
      q->wake_wanted = false;
      post([weak] {
        if (auto s = weak.lock())
          s->wake();
      });
    }
  };
  return p;
}

// Streamed stdin: written on the loop (Exec.writeStdin), pulled by the pool thread.
struct stdin_queue {
  std::mutex mu;
  std::condition_variable more;
  std::deque<std::string> chunks;
  std::size_t bytes = 0;
  bool closed = false; // end of stdin
  // Loop only: a writer waiting for room, fulfilled by a post from the puller.
  kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> room;
};

} // namespace

// The streamed stdin of one exec while a handle holds it: the handles from start and
// openExec share it; when the last goes, stdin ends (the process reads end of file) and
// the exec leaves service_context::exec_stdins. Loop thread only.
struct stdin_holder {
  explicit stdin_holder(std::shared_ptr<service_context> c)
      : q(std::make_shared<stdin_queue>()), ctx(std::move(c)) {}
  stdin_holder(const stdin_holder&) = delete;
  stdin_holder& operator=(const stdin_holder&) = delete;

  std::shared_ptr<stdin_queue> q;
  std::shared_ptr<service_context> ctx;
  std::string key; // set once start has the exec's id
  ~stdin_holder() {
    {
      std::lock_guard l(q->mu);
      q->closed = true;
    }
    q->more.notify_all();
    auto it = ctx->exec_stdins.find(key);
    if (it != ctx->exec_stdins.end() && it->second.expired())
      ctx->exec_stdins.erase(it);
  }
};

namespace {

std::string stdin_key(const sandbox_ref& s, const std::string& exec_id) {
  return s.who.tenant + '\0' + s.id + '\0' + exec_id;
}

std::function<bool(std::string&)> stdin_source_of(std::shared_ptr<stdin_queue> q, poster_fn post) {
  return [q, post = std::move(post)](std::string& chunk) {
    std::unique_lock l(q->mu);
    q->more.wait(l, [&] { return q->closed || !q->chunks.empty(); });
    if (q->chunks.empty())
      return false;
    chunk = std::move(q->chunks.front());
    q->chunks.pop_front();
    q->bytes -= chunk.size();
    post([q] {
      KJ_IF_MAYBE (r, q->room) {
        auto f = kj::mv(*r);
        q->room = nullptr;
        f->fulfill();
      }
    });
    return true;
  };
}

result<actors::exec_request> exec_request_of(rpc::ExecRequest::Reader r, const create_defaults& d) {
  actors::exec_request x;
  if (auto ok = check_count("arguments", r.getArgv().size(), d.inputs.argv); !ok)
    return ok.err(); // before copying them
  for (auto a : r.getArgv())
    x.argv.emplace_back(a.cStr(), a.size());
  if (x.argv.empty() || x.argv[0].empty())
    return make_error(errc::invalid_argument,
                      "the command is empty; give the program and its arguments (argv)");
  if (auto ok = check_argv(x.argv, d.inputs); !ok)
    return ok.err();
  for (const auto& a : x.argv)
    if (a.find('\0') != std::string::npos)
      return make_error(errc::invalid_argument, "an argument of the command has a NUL byte");
  auto env = env_of(r.getEnv());
  if (!env)
    return env.err();
  x.env = std::move(env).value();
  if (auto ok = check_env(x.env, d.inputs); !ok)
    return ok.err();
  x.cwd = whole_text(r.getCwd()); // "": the template's (with_template_cwd), else "/"
  if (auto ok = check_size("cwd", x.cwd.size(), d.inputs.cwd_bytes); !ok)
    return ok.err();
  if (r.getTimeoutNs() < 0)
    return make_error(errc::invalid_argument,
                      "the exec timeout is negative; give 0 for none or a positive duration");
  x.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::nanoseconds(r.getTimeoutNs()) + std::chrono::nanoseconds(999'999));
  if (d.exec_timeout_ceiling.count() > 0) {
    if (x.timeout > d.exec_timeout_ceiling)
      return make_error(errc::invalid_argument,
                        "the exec timeout " + std::to_string(x.timeout.count()) +
                          " ms is over this node's ceiling of " +
                          std::to_string(d.exec_timeout_ceiling.count()) +
                          " ms; give at most the ceiling (docs/api.md \"Limits\")");
    if (x.timeout.count() == 0)
      x.timeout = d.exec_timeout_ceiling;
  }
  x.max_output_bytes = r.getMaxOutputBytes();
  if (d.exec_output_ceiling_bytes && x.max_output_bytes > d.exec_output_ceiling_bytes)
    return make_error(errc::invalid_argument,
                      "maxOutputBytes " + std::to_string(x.max_output_bytes) +
                        " is over this node's ceiling of " +
                        std::to_string(d.exec_output_ceiling_bytes) +
                        " bytes per stream; ask for at most the ceiling (docs/api.md \"Limits\")");
  auto in = r.getStdin();
  if (auto ok = check_size("stdin", in.size(), d.inputs.stdin_bytes); !ok)
    return ok.err();
  if (in.size() > 0)
    x.stdin_data = std::string(reinterpret_cast<const char*>(in.begin()), in.size());
  return x;
}

void fill(rpc::ExecResult::Builder out, const events::exec_finished& f) {
  if (f.outcome == events::op_outcome::failed && f.failure)
    throw_error(*f.failure);
  out.setExecId(f.exec_id);
  out.setExitCode(f.exit_code);
  out.setSignal(f.signal);
  out.setTimedOut(f.timed_out);
  out.setOomKilled(f.oom_killed);
  out.setOutputTruncated(f.output_truncated);
  out.setDurationNs(f.duration.count());
  out.setStdoutBytes(f.stdout_bytes);
  out.setStderrBytes(f.stderr_bytes);
  out.setInterrupted(f.outcome == events::op_outcome::interrupted);
}

void fill(rpc::ExecInfo::Builder out, const std::string& exec_id,
          const std::vector<std::string>& argv, std::int64_t started_ns) {
  out.setExecId(exec_id);
  auto a = out.initArgv(static_cast<unsigned>(argv.size()));
  for (unsigned i = 0; i < argv.size(); ++i)
    a.set(i, argv[i]);
  out.setStartedAtNs(started_ns);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

// One exec of one sandbox. From start: it owns the exec's output pipe and streamed stdin
// (dropping it drops the output still to come). Streamed stdin is shared by the handles
// from start and openExec; it ends when the last of them is dropped.
class exec_handle final : public rpc::Exec::Server {
public:
  exec_handle(sandbox_ref s, std::string exec_id, std::vector<std::string> argv,
              std::int64_t started_ns, std::optional<output_pipe> out,
              std::shared_ptr<stdin_holder> in)
      : s_(std::move(s)), exec_id_(std::move(exec_id)), argv_(std::move(argv)),
        started_ns_(started_ns), out_(std::move(out)), in_(std::move(in)) {}

  kj::Promise<void> wait(WaitContext context) override {
    return sandbox_call(*s_.ctx, s_.conn, "Exec.wait", [this, context]() mutable {
      return operation<events::exec_finished>(s_,
                                              [this](auto done) {
                                                s_.ctx->plane->wait_exec(s_.id, s_.who.tenant,
                                                                         exec_id_, std::move(done));
                                              })
        .then([this](actors::op_result<events::exec_finished> r) {
          auto f = take(std::move(r));
          if (!out_)
            return kj::Promise<events::exec_finished>(kj::mv(f));
          // The first wait takes the output still to come; a later one only the result.
          auto pipe = std::move(*out_);
          out_.reset();
          pipe.sender->finish();
          auto sender = pipe.sender;
          return kj::mv(pipe.sent)
            .then([f = kj::mv(f)]() mutable { return kj::mv(f); })
            .attach(kj::mv(sender));
        })
        .then([context](events::exec_finished f) mutable {
          fill(context.getResults().initResult(), f);
        });
    });
  }

  kj::Promise<void> kill(KillContext context) override {
    const int signal =
      context.getParams().getSignal() == 0 ? SIGKILL : context.getParams().getSignal();
    if (signal < 1 || signal > 64)
      throw_error(errc::invalid_argument,
                  "signal " + std::to_string(signal) + " is not a signal number (1-64, 0 = KILL)");
    return sandbox_call(*s_.ctx, s_.conn, "Exec.kill", [this, signal]() {
      return operation<events::exec_kill_requested>(
               s_,
               [this, signal](auto done) {
                 s_.ctx->plane->kill_exec(s_.id, s_.caller(), exec_id_, signal, std::move(done));
               })
        .then([](actors::op_result<events::exec_kill_requested> r) { take(std::move(r)); });
    });
  }

  kj::Promise<void> writeStdin(WriteStdinContext context) override {
    auto q = stdin_or_throw();
    auto data = context.getParams().getData();
    check_result(
      check_size("a stdin write", data.size(), s_.ctx->options.defaults.inputs.stdin_bytes));
    {
      std::lock_guard l(q->mu);
      if (q->closed)
        throw_error(errc::conflict, "stdin of exec " + exec_id_ + " is closed already");
      q->chunks.emplace_back(reinterpret_cast<const char*>(data.begin()), data.size());
      q->bytes += data.size();
      if (q->bytes < s_.ctx->options.output_window_bytes)
        data = nullptr;
    }
    q->more.notify_all();
    if (data == nullptr)
      return kj::READY_NOW;
    // Full: answer once the process has taken some (flow control for the client).
    auto paf = kj::newPromiseAndFulfiller<void>();
    q->room = kj::mv(paf.fulfiller);
    return kj::mv(paf.promise);
  }

  kj::Promise<void> closeStdin(CloseStdinContext) override {
    auto q = stdin_or_throw();
    {
      std::lock_guard l(q->mu);
      q->closed = true;
    }
    q->more.notify_all();
    return kj::READY_NOW;
  }

  kj::Promise<void> info(InfoContext context) override {
    if (!argv_.empty()) {
      fill(context.getResults().initInfo(), exec_id_, argv_, started_ns_);
      return kj::READY_NOW;
    }
    return sandbox_call(*s_.ctx, s_.conn, "Exec.info", [this, context]() mutable {
      return operation<std::vector<events::exec_started>>(
               s_,
               [this](auto done) {
                 s_.ctx->plane->list_execs(s_.id, s_.who.tenant, std::move(done));
               })
        .then([this, context](actors::op_result<std::vector<events::exec_started>> r) mutable {
          for (const auto& e : take(std::move(r)))
            if (e.exec_id == exec_id_) {
              fill(context.getResults().initInfo(), e.exec_id, e.argv, 0);
              return;
            }
          throw_error(errc::not_found, "exec " + exec_id_ + " of sandbox " + s_.id +
                                         " is not running; wait for it to get its result");
        });
    });
  }

private:
  std::shared_ptr<stdin_queue> stdin_or_throw() {
    if (!in_)
      throw_error(errc::conflict,
                  "exec " + exec_id_ +
                    " does not read streamed stdin (or every handle to it was dropped, which "
                    "ended it); start it with streamStdin and keep a handle while writing");
    return in_->q;
  }

  sandbox_ref s_;
  std::string exec_id_;
  std::vector<std::string> argv_;
  std::int64_t started_ns_;
  std::optional<output_pipe> out_;
  std::shared_ptr<stdin_holder> in_;
};

} // namespace

// An exec that names no working directory starts in its template's (the image's WORKDIR, a
// spec's WORKDIR), as the exec_started event then records; "/" when the template has none.
static void with_template_cwd(actors::exec_request& req, const actors::sandbox_state& state) {
  if (req.cwd.empty())
    req.cwd =
      state.spec.content.working_directory.empty() ? "/" : state.spec.content.working_directory;
}

kj::Promise<void>
serve_exec(const sandbox_ref& s,
           capnp::CallContext<rpc::Sandbox::ExecParams, rpc::Sandbox::ExecResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.exec", [s, context]() mutable {
    auto params = context.getParams();
    if (params.getRequest().getStreamStdin())
      throw_error(errc::invalid_argument,
                  "streamStdin needs a handle to write to: use start, or give stdin bytes");
    auto req = take(exec_request_of(params.getRequest(), s.ctx->options.defaults));
    std::optional<output_pipe> out;
    actors::output_sink sink;
    if (params.hasOutput()) {
      out = make_output_pipe(*s.ctx, params.getOutput());
      sink = out->sink;
    }
    auto pipe = kj::heap<std::optional<output_pipe>>(std::move(out));
    auto& held = *pipe;
    return operation<events::exec_finished>(
             s,
             [s, req = std::move(req),
              sink = std::move(sink)](auto done, const actors::sandbox_state& state) mutable {
               with_template_cwd(req, state);
               s.ctx->plane->exec(s.id, s.caller(), std::move(req), std::move(sink),
                                  std::move(done));
             })
      .then([&held](actors::op_result<events::exec_finished> r) {
        auto f = take(std::move(r));
        if (!held)
          return kj::Promise<events::exec_finished>(kj::mv(f));
        // Every chunk was queued before the result; the result goes after the last one.
        held->sender->finish();
        return held->sent.then([f = kj::mv(f)]() mutable { return kj::mv(f); });
      })
      .then(
        [context](events::exec_finished f) mutable { fill(context.getResults().initResult(), f); })
      .attach(kj::mv(pipe));
  });
}

kj::Promise<void>
serve_start(const sandbox_ref& s,
            capnp::CallContext<rpc::Sandbox::StartParams, rpc::Sandbox::StartResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.start", [s, context]() mutable {
    auto params = context.getParams();
    auto req = take(exec_request_of(params.getRequest(), s.ctx->options.defaults));
    // Until there is a handle, the call owns the stdin: if start fails or the call is
    // dropped, stdin ends.
    std::shared_ptr<stdin_holder> in;
    if (params.getRequest().getStreamStdin()) {
      if (req.stdin_data)
        throw_error(errc::invalid_argument,
                    "give stdin either as bytes or streamed (streamStdin), not both");
      in = std::make_shared<stdin_holder>(s.ctx);
      req.stdin_source = stdin_source_of(in->q, s.ctx->bridge->poster());
    }
    std::optional<output_pipe> out;
    actors::output_sink sink;
    if (params.hasOutput()) {
      out = make_output_pipe(*s.ctx, params.getOutput());
      sink = out->sink;
    }
    auto argv = req.argv;
    const auto started = now_ns();
    auto owned = kj::heap<std::optional<output_pipe>>(std::move(out));
    auto& held = *owned;
    return operation<std::string>(s,
                                  [s, req = std::move(req), sink = std::move(sink)](
                                    auto done, const actors::sandbox_state& state) mutable {
                                    with_template_cwd(req, state);
                                    s.ctx->plane->start_exec(s.id, s.caller(), std::move(req),
                                                             std::move(sink), std::move(done));
                                  })
      .then([s, context, &held, argv = std::move(argv), started,
             in](actors::op_result<std::string> r) mutable {
        auto exec_id = take(std::move(r));
        if (in) {
          in->key = stdin_key(s, exec_id);
          s.ctx->exec_stdins[in->key] = in;
        }
        context.getResults().setExec(kj::heap<exec_handle>(
          s, std::move(exec_id), std::move(argv), started, std::move(held), std::move(in)));
      })
      .attach(kj::mv(owned));
  });
}

kj::Promise<void>
serve_execs(const sandbox_ref& s,
            capnp::CallContext<rpc::Sandbox::ExecsParams, rpc::Sandbox::ExecsResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.execs", [s, context]() mutable {
    return operation<std::vector<events::exec_started>>(
             s, [s](auto done) { s.ctx->plane->list_execs(s.id, s.who.tenant, std::move(done)); })
      .then([context](actors::op_result<std::vector<events::exec_started>> r) mutable {
        auto list = take(std::move(r));
        auto out = context.getResults().initExecs(static_cast<unsigned>(list.size()));
        for (unsigned i = 0; i < list.size(); ++i)
          fill(out[i], list[i].exec_id, list[i].argv, 0);
      });
  });
}

kj::Promise<void> serve_open_exec(
  const sandbox_ref& s,
  capnp::CallContext<rpc::Sandbox::OpenExecParams, rpc::Sandbox::OpenExecResults> context) {
  return sandbox_call(*s.ctx, s.conn, "Sandbox.openExec", [s, context]() mutable {
    std::string exec_id = whole_text(context.getParams().getExecId());
    if (exec_id.empty())
      throw_error(errc::invalid_argument, "the exec id is empty; give the id start returned");
    // The sandbox must exist for this tenant (operation), and know the exec: in flight, or
    // finished recently (wait_exec answers those at once, and not_found for the others).
    return operation<std::vector<events::exec_started>>(
             s, [s](auto done) { s.ctx->plane->list_execs(s.id, s.who.tenant, std::move(done)); })
      .then([s, exec_id](actors::op_result<std::vector<events::exec_started>> r) mutable {
        const auto execs = take(std::move(r));
        if (std::any_of(execs.begin(), execs.end(),
                        [&](const events::exec_started& e) { return e.exec_id == exec_id; }))
          return kj::Promise<void>(kj::READY_NOW);
        return operation<events::exec_finished>(s,
                                                [s, exec_id](auto done) {
                                                  s.ctx->plane->wait_exec(s.id, s.who.tenant,
                                                                          exec_id, std::move(done));
                                                })
          .then([](actors::op_result<events::exec_finished> f) { take(std::move(f)); });
      })
      .then([s, context, exec_id = std::move(exec_id)]() mutable {
        std::shared_ptr<stdin_holder> in;
        if (auto it = s.ctx->exec_stdins.find(stdin_key(s, exec_id));
            it != s.ctx->exec_stdins.end())
          in = it->second.lock();
        context.getResults().setExec(kj::heap<exec_handle>(
          s, std::move(exec_id), std::vector<std::string>{}, 0, std::nullopt, std::move(in)));
      });
  });
}

} // namespace sandboxd::api
