// envd's process service on the E2B endpoint: Start runs the command through
// Sandbox.start (a background exec whose output streams back as it is produced, ended by the
// exec's result), the other calls reach the exec by its pid (process_table, or the sandbox's
// execs when the endpoint did not start it).
#include "api/rpc_error.hpp"
#include "e2b/proto_json.hpp"
#include "e2b/routes.hpp"

namespace sandboxd::e2b {

namespace {

constexpr std::int64_t k_ns_per_ms = 1'000'000;

capnp::Text::Reader text(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}

// A failure as envd's answer: a sandbox that is not there is the 502 of E2B's proxy; a
// refused key is unauthenticated; the rest is Connect's error.
connect_error envd_error(const std::string& sandbox_id, const kj::Exception& e, bool& gone) {
  auto c = connect_failure_of(e);
  gone =
    c.code == connect_code::not_found && c.message.rfind("sandbox " + sandbox_id + " ", 0) == 0;
  if (c.code == connect_code::permission_denied)
    c.code = connect_code::unauthenticated;
  return c;
}

kj::Promise<void> unary_failure(exchange& x, const kj::Exception& e) {
  if (x.responded())
    kj::throwFatalException(kj::cp(e));
  bool gone = false;
  auto c = envd_error(x.sandbox_id, e, gone);
  if (gone)
    return x.reply_json(502, sandbox_gone_json(x.sandbox_id));
  return x.reply_json(static_cast<unsigned>(http_status(c.code)), error_body(c));
}

kj::Promise<void> stream_failure(exchange& x, connect_stream& s, const kj::Exception& e) {
  bool gone = false;
  auto c = envd_error(x.sandbox_id, e, gone);
  if (gone && !s.begun())
    return x.reply_json(502, sandbox_gone_json(x.sandbox_id));
  if (gone)
    c = connect_error{connect_code::unavailable,
                      "the sandbox " + x.sandbox_id + " was not found (it ended meanwhile)"};
  return s.finish(c);
}

void require_type(const exchange& x, std::string_view type) {
  const auto t = std::string_view(x.content_type).substr(0, x.content_type.find(';'));
  if (t != type)
    throw_connect(connect_code::invalid_argument, "Content-Type " + x.content_type +
                                                    ": this call takes " + std::string(type) +
                                                    " (the Connect protocol's JSON codec)");
}

// The one message of a unary call.
kj::Promise<std::string> unary_body(route_context& ctx, exchange& x) {
  require_type(x, "application/json");
  return x.read_body(ctx.limits.max_message);
}

// The one message a server-streaming call's request holds.
kj::Promise<std::string> stream_request(route_context& ctx, exchange& x) {
  require_type(x, "application/connect+json");
  return x.read_body(ctx.limits.max_message + 16).then([&ctx](std::string body) {
    envelope_reader r(ctx.limits.max_message);
    std::vector<envelope_reader::message> got;
    if (!r.feed(body, got) || !r.finish())
      throw_connect(r.failure()->code, r.failure()->message);
    if (got.size() != 1 || got[0].end_of_stream)
      throw_connect(connect_code::invalid_argument,
                    "a server-streaming request holds exactly one message, not " +
                      std::to_string(got.size()));
    return kj::mv(got[0].bytes);
  });
}

template <class T>
T parsed(result<T> r) {
  if (!r)
    throw_connect(connect_code::invalid_argument, r.err().message);
  return std::move(r).value();
}

// envd runs commands as the user the call names (HTTP Basic "user:"). sandboxd runs them as
// "root" when named (the answer, for ExecRequest.user), else as the template's user ("").
std::string user_of(const exchange& x) {
  constexpr std::string_view basic = "Basic ";
  if (x.authorization.rfind(basic, 0) != 0)
    return "";
  auto decoded = decode_base64(std::string_view(x.authorization).substr(basic.size()));
  if (!decoded)
    throw_connect(connect_code::invalid_argument, "the Authorization header is not Basic");
  const auto user = decoded->substr(0, decoded->find(':'));
  if (!user.empty() && user != "root")
    throw_connect(connect_code::invalid_argument,
                  "user " + user +
                    ": sandboxd runs commands and file calls as the sandbox's "
                    "root user; leave user unset or give \"root\" (docs/e2b.md)");
  return user;
}

// The Exec of the process `pid`: from the table, else among the sandbox's execs.
kj::Promise<rpc::Exec::Client> exec_of(route_context& ctx, envd_caller& c,
                                       const process_selector& sel) {
  if (!sel.pid)
    throw_connect(connect_code::not_found, "sandboxd keeps no process tags; name it by its pid");
  const auto pid = *sel.pid;
  if (auto e = ctx.processes.find(c.sandbox_key, pid))
    return rpc::Exec::Client(e->exec);
  auto sandbox = c.sandbox;
  return sandbox.execsRequest().send().then(
    [sandbox, pid](capnp::Response<rpc::Sandbox::ExecsResults> r) mutable {
      for (auto x : r.getExecs())
        if (pid_of(x.getExecId().cStr()) == pid) {
          auto req = sandbox.openExecRequest();
          req.setExecId(x.getExecId());
          return req.send().getExec();
        }
      throw_connect(connect_code::not_found, "process with pid " + std::to_string(pid) +
                                               " not found (it ended, or never ran here)");
    });
}

kj::Promise<void> finish_with(connect_stream& s, const exec_end& end, std::int64_t timeout_ms) {
  if (end.timed_out)
    return s.finish(connect_error{connect_code::deadline_exceeded,
                                  "the command ran longer than its timeout (" +
                                    std::to_string(timeout_ms) +
                                    " ms) and was killed; pass a larger timeout, or 0 for none"});
  if (end.interrupted)
    return s.finish(connect_error{connect_code::unavailable,
                                  "sandboxd restarted while the command ran; its outcome is "
                                  "unknown"});
  return s.send(end_event(end_of(end.exit_code, end.signal))).then([&s] {
    return s.finish(std::nullopt);
  });
}

// The stream of `entry` until it ends, or the client goes away (or stops reading).
kj::Promise<void> follow(exchange& x, connect_stream& s, std::shared_ptr<process_entry> entry) {
  if (x.keepalive_s > 0)
    s.keep_alive(std::min<std::int64_t>(x.keepalive_s, 600) * kj::SECONDS, keepalive_event());
  const auto timeout = x.timeout_ms.value_or(0);
  auto done = entry->ended.addBranch().then(
    [&s, timeout](exec_end end) { return finish_with(s, end, timeout); });
  auto gone = s.broken().then([]() {
    kj::throwFatalException(
      KJ_EXCEPTION(DISCONNECTED, "the client stopped reading the process's output"));
  });
  return done.exclusiveJoin(kj::mv(gone)).attach(kj::defer([entry, &s] {
    process_table::detach(*entry, s);
  }));
}

kj::Promise<void> start(route_context& ctx, exchange& x, connect_stream& s) {
  return stream_request(ctx, x).then([&ctx, &x, &s](std::string body) {
    auto r = parsed(parse_start_request(body));
    if (r.pty)
      throw_connect(connect_code::unimplemented,
                    "sandboxd runs no PTY; run the command without one (docs/e2b.md)");
    if (r.process.cmd.empty())
      throw_connect(connect_code::invalid_argument, "no command to start (process.cmd)");
    auto user = user_of(x);
    return envd_caller_of(ctx, x).then([&ctx, &x, &s, r = kj::mv(r),
                                        user = kj::mv(user)](envd_caller c) mutable {
      auto entry = ctx.processes.prepare(c.sandbox_key, r.process, r.stdin, s);
      auto req = c.sandbox.startRequest();
      auto e = req.initRequest();
      auto argv = e.initArgv(static_cast<unsigned>(r.process.args.size() + 1));
      argv.set(0, text(r.process.cmd));
      for (unsigned i = 0; i < r.process.args.size(); ++i)
        argv.set(i + 1, text(r.process.args[i]));
      auto env = e.initEnv(static_cast<unsigned>(r.process.envs.size()));
      for (unsigned i = 0; i < r.process.envs.size(); ++i) {
        env[i].setName(text(r.process.envs[i].first));
        env[i].setValue(text(r.process.envs[i].second));
      }
      if (r.process.cwd && !r.process.cwd->empty())
        e.setCwd(sandbox_path(*r.process.cwd));
      e.setUser(text(user));
      e.setStreamStdin(r.stdin);
      e.setMaxOutputBytes(ctx.limits.max_output_bytes);
      // E2B's command timeout (the call's deadline) ends the process, as envd's does.
      if (x.timeout_ms)
        e.setTimeoutNs(*x.timeout_ms * k_ns_per_ms);
      req.setOutput(ctx.processes.sink_of(entry));
      auto exec = req.send().getExec();
      // However this call ends (a failed start, the client gone), its stream stops receiving
      // the process's output: the daemon may hold the sink longer than the stream lives.
      auto leave = kj::defer([entry, &s] { process_table::detach(*entry, s); });
      return exec.infoRequest()
        .send()
        .then([&ctx, &x, &s, entry, exec, c](capnp::Response<rpc::Exec::InfoResults> info) mutable {
          ctx.processes.started(entry, exec, info.getInfo().getExecId().cStr());
          s.begin(start_event(entry->pid));
          return follow(x, s, entry);
        })
        .attach(kj::mv(leave));
    });
  });
}

kj::Promise<void> connect(route_context& ctx, exchange& x, connect_stream& s) {
  return stream_request(ctx, x).then([&ctx, &x, &s](std::string body) {
    auto sel = parsed(parse_process_request(body));
    return envd_caller_of(ctx, x).then([&ctx, &x, &s, sel](envd_caller c) -> kj::Promise<void> {
      if (sel.pid)
        if (auto entry = ctx.processes.find(c.sandbox_key, *sel.pid)) {
          s.begin(start_event(entry->pid));
          process_table::attach(*entry, s);
          return follow(x, s, entry);
        }
      // Not one the endpoint started: its start and end, not its output.
      return exec_of(ctx, c, sel).then([&x, &s, pid = *sel.pid](rpc::Exec::Client exec) {
        s.begin(start_event(pid));
        return exec.waitRequest().send().then(
          [&x, &s, exec](capnp::Response<rpc::Exec::WaitResults> r) mutable {
            auto res = r.getResult();
            return finish_with(
              s,
              exec_end{res.getExitCode(), res.getSignal(), res.getTimedOut(), res.getInterrupted()},
              x.timeout_ms.value_or(0));
          });
      });
    });
  });
}

kj::Promise<std::string> list(route_context& ctx, exchange& x) {
  return envd_caller_of(ctx, x).then([&ctx](envd_caller c) {
    return c.sandbox.execsRequest().send().then(
      [&ctx, c](capnp::Response<rpc::Sandbox::ExecsResults> r) mutable {
        std::vector<process_view> out;
        for (auto e : r.getExecs()) {
          process_view v;
          v.pid = pid_of(e.getExecId().cStr());
          if (auto known = ctx.processes.find(c.sandbox_key, v.pid)) {
            v.config = known->config;
          } else {
            auto argv = e.getArgv();
            if (argv.size() > 0)
              v.config.cmd = argv[0].cStr();
            for (unsigned i = 1; i < argv.size(); ++i)
              v.config.args.push_back(argv[i].cStr());
          }
          out.push_back(std::move(v));
        }
        return list_response(out);
      });
  });
}

kj::Promise<std::string> send_input(route_context& ctx, exchange& x, std::string body) {
  auto r = parsed(parse_send_input(body));
  if (r.pty)
    throw_connect(connect_code::unimplemented, "sandboxd runs no PTY (docs/e2b.md)");
  return envd_caller_of(ctx, x).then([&ctx, r = kj::mv(r)](envd_caller c) mutable {
    return exec_of(ctx, c, r.process)
      .then([c, data = kj::mv(r.data)](rpc::Exec::Client exec) mutable {
        auto w = exec.writeStdinRequest();
        w.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(data.data()), data.size()));
        return w.send().then([exec, c]() mutable { return std::string("{}"); });
      });
  });
}

kj::Promise<std::string> send_signal(route_context& ctx, exchange& x, std::string body) {
  auto r = parsed(parse_send_signal(body));
  return envd_caller_of(ctx, x).then([&ctx, r](envd_caller c) {
    return exec_of(ctx, c, r.process).then([c, signal = r.signal](rpc::Exec::Client exec) mutable {
      auto k = exec.killRequest();
      k.setSignal(signal);
      return k.send().then([exec, c](auto) mutable { return std::string("{}"); });
    });
  });
}

kj::Promise<std::string> close_stdin(route_context& ctx, exchange& x, std::string body) {
  auto sel = parsed(parse_process_request(body));
  return envd_caller_of(ctx, x).then([&ctx, sel](envd_caller c) {
    return exec_of(ctx, c, sel).then([c](rpc::Exec::Client exec) mutable {
      return exec.closeStdinRequest().send().then(
        [exec, c](auto) mutable { return std::string("{}"); });
    });
  });
}

// StreamInput: a client stream of a start message naming the process, then its input.
kj::Promise<void> stream_input_from(route_context& ctx, exchange& x,
                                    std::shared_ptr<envelope_reader> reader,
                                    std::shared_ptr<kj::Maybe<rpc::Exec::Client>> exec,
                                    std::shared_ptr<envd_caller> caller) {
  return x.read_some(64u << 10).then([&ctx, &x, reader, exec, caller](std::string piece) mutable {
    std::vector<envelope_reader::message> got;
    if (piece.empty()) {
      if (!reader->finish())
        throw_connect(reader->failure()->code, reader->failure()->message);
    } else if (!reader->feed(piece, got)) {
      throw_connect(reader->failure()->code, reader->failure()->message);
    }
    kj::Promise<void> steps = kj::READY_NOW;
    bool ended = piece.empty();
    for (auto& m : got) {
      if (m.end_of_stream) {
        ended = true;
        break;
      }
      auto ev = parsed(parse_stream_input(m.bytes));
      steps = steps.then([&ctx, &x, ev = kj::mv(ev), exec, caller]() mutable -> kj::Promise<void> {
        if (ev.type == stream_input_event::kind::start) {
          return envd_caller_of(ctx, x).then([&ctx, ev, exec, caller](envd_caller c) mutable {
            *caller = c;
            return exec_of(ctx, c, ev.process).then([exec](rpc::Exec::Client e) mutable {
              *exec = kj::mv(e);
            });
          });
        }
        if (ev.type == stream_input_event::kind::keepalive)
          return kj::READY_NOW;
        KJ_IF_MAYBE (e, *exec) {
          auto w = e->writeStdinRequest();
          w.setData(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(ev.data.data()), ev.data.size()));
          return w.send();
        }
        throw_connect(connect_code::invalid_argument,
                      "StreamInput's first message must name the process (start)");
      });
    }
    return steps.then([&ctx, &x, reader, exec, caller, ended]() mutable -> kj::Promise<void> {
      if (ended)
        return kj::READY_NOW;
      return stream_input_from(ctx, x, reader, exec, caller);
    });
  });
}

kj::Promise<void> unary(route_context& ctx, exchange& x,
                        kj::Function<kj::Promise<std::string>(std::string)> call) {
  return unary_body(ctx, x)
    .then([call = kj::mv(call)](std::string body) mutable { return call(kj::mv(body)); })
    .then([&x](std::string answer) { return x.reply_json(200, kj::mv(answer)); });
}

} // namespace

kj::Promise<void> serve_process(route_context& ctx, exchange& x, std::string method) {
  if (method == "Start" || method == "Connect" || method == "StreamInput") {
    auto s = kj::heap<connect_stream>(x);
    auto& stream = *s;
    auto run = kj::evalNow([&]() -> kj::Promise<void> {
      if (method == "Start")
        return start(ctx, x, stream);
      if (method == "Connect")
        return connect(ctx, x, stream);
      require_type(x, "application/connect+json");
      auto caller = std::make_shared<envd_caller>();
      return stream_input_from(ctx, x, std::make_shared<envelope_reader>(ctx.limits.max_message),
                               std::make_shared<kj::Maybe<rpc::Exec::Client>>(), caller)
        .then([&stream] {
          stream.begin("{}");
          return stream.finish(std::nullopt);
        });
    });
    return run
      .catch_([&x, &stream](kj::Exception&& e) -> kj::Promise<void> {
        if (e.getType() == kj::Exception::Type::DISCONNECTED || stream.is_broken())
          kj::throwFatalException(kj::mv(e));
        return stream_failure(x, stream, e);
      })
      .attach(kj::mv(s));
  }
  auto run = kj::evalNow([&]() -> kj::Promise<void> {
    if (method == "List")
      return unary_body(ctx, x)
        .then([&ctx, &x](std::string) { return list(ctx, x); })
        .then([&x](std::string answer) { return x.reply_json(200, kj::mv(answer)); });
    if (method == "SendInput")
      return unary(ctx, x, [&ctx, &x](std::string b) { return send_input(ctx, x, kj::mv(b)); });
    if (method == "SendSignal")
      return unary(ctx, x, [&ctx, &x](std::string b) { return send_signal(ctx, x, kj::mv(b)); });
    if (method == "CloseStdin")
      return unary(ctx, x, [&ctx, &x](std::string b) { return close_stdin(ctx, x, kj::mv(b)); });
    if (method == "Update")
      throw_connect(connect_code::unimplemented, "sandboxd runs no PTY to resize (docs/e2b.md)");
    throw_connect(connect_code::unimplemented, "process." + method + " is not a method of envd");
  });
  return run.catch_([&x](kj::Exception&& e) { return unary_failure(x, e); });
}

} // namespace sandboxd::e2b
