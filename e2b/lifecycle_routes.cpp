// The sandbox API of the E2B endpoint: each route is one or two calls of sandboxd's Session or
// Sandbox capability with the caller's API key (docs/e2b.md has the table).
#include "api/rpc_error.hpp"
#include "e2b/routes.hpp"

#include <chrono>

namespace sandboxd::e2b {

namespace {

constexpr std::int64_t k_ns_per_s = 1'000'000'000;
// A timeout above this many seconds (about 290 years) would overflow nanoseconds.
constexpr std::int64_t k_max_timeout_s = 9'000'000'000LL;

capnp::Text::Reader text(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}

std::string_view after(std::string_view s, std::string_view prefix) {
  return s.substr(prefix.size());
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

kj::Promise<void> answer_failure(exchange& x, const kj::Exception& e) {
  auto f = failure_of(e);
  // An API key the daemon refuses is E2B's 401 (the SDKs raise AuthenticationException).
  const int status = f.code == errc::permission_denied ? 401 : http_status(f.code);
  return x.reply_json(static_cast<unsigned>(status), api_error_json(status, f.message));
}

std::string api_key_of(const exchange& x) {
  if (!x.api_key.empty())
    return x.api_key;
  constexpr std::string_view bearer = "Bearer ";
  if (x.authorization.rfind(bearer, 0) == 0)
    return x.authorization.substr(bearer.size());
  return {};
}

kj::Promise<std::shared_ptr<daemon_session>> session_of(route_context& ctx, exchange& x) {
  auto key = api_key_of(x);
  if (key.empty())
    api::throw_error(errc::permission_denied,
                     "no API key: send a sandboxd token in the X-API-KEY header (E2B_API_KEY; "
                     "scripts/e2b-env prints the lines that set it)");
  return ctx.link.session_for(key);
}

sandbox_view view_of(rpc::SandboxInfo::Reader i) {
  sandbox_view v;
  v.id = i.getId().cStr();
  v.template_name = i.getTemplate().cStr();
  v.paused =
    i.getState() == rpc::SandboxState::PAUSING || i.getState() == rpc::SandboxState::PAUSED;
  v.started_ns = i.getCreatedAtNs();
  v.end_ns = i.getEndTimeNs();
  v.memory_mib = i.getLimits().getMemoryMib();
  v.cpu_millicores = i.getLimits().getCpuMillicores();
  v.disk_mib = i.getLimits().getDiskMib();
  for (auto l : i.getLabels())
    v.metadata.push_back(events::label{l.getKey().cStr(), l.getValue().cStr()});
  v.on_timeout_pause = std::string_view(i.getOnTimeout().cStr()).rfind("pause", 0) == 0;
  v.internet = i.getNetwork().getMode() != schema::NetworkPolicy::Mode::NONE;
  return v;
}

kj::Promise<void> create(route_context& ctx, exchange& x) {
  return x.read_body(ctx.limits.max_json_body).then([&ctx, &x](std::string body) {
    auto spec = parse_new_sandbox(body);
    if (!spec)
      api::throw_error(spec.err());
    if (spec->timeout_s > k_max_timeout_s)
      api::throw_error(errc::invalid_argument,
                       "timeout " + std::to_string(spec->timeout_s) + " s is too long");
    if (x.idempotency_key.size() > 128)
      api::throw_error(errc::invalid_argument, "the Idempotency-Key has " +
                                                 std::to_string(x.idempotency_key.size()) +
                                                 " bytes; sandboxd keeps at most 128");
    return session_of(ctx, x).then(
      [&ctx, &x, spec = kj::mv(*spec)](std::shared_ptr<daemon_session> s) mutable {
        auto req = s->session.createRequest();
        auto r = req.initRequest();
        r.setTemplate(text(spec.template_name));
        auto t = r.initTimeouts();
        t.initTimeout().setNs(spec.timeout_s * k_ns_per_s);
        // E2B's timeout kills unless autoPause says pause (sandboxd's own default pauses).
        if (spec.auto_pause)
          t.initOnTimeout().setPause(spec.auto_pause_memory ? schema::PauseMode::MEMORY
                                                            : schema::PauseMode::FILESYSTEM);
        else
          t.initOnTimeout().setDelete();
        auto env = r.initEnv(static_cast<unsigned>(spec.env.size()));
        for (unsigned i = 0; i < spec.env.size(); ++i) {
          env[i].setName(text(spec.env[i].first));
          env[i].setValue(text(spec.env[i].second));
        }
        auto labels = r.initLabels(static_cast<unsigned>(spec.metadata.size()));
        for (unsigned i = 0; i < spec.metadata.size(); ++i) {
          labels[i].setKey(text(spec.metadata[i].key));
          labels[i].setValue(text(spec.metadata[i].value));
        }
        if (spec.allow_internet_access.value_or(false))
          r.initNetwork().setMode(schema::NetworkPolicy::Mode::FULL);
        if (!x.idempotency_key.empty())
          r.setClientRequestId(text(x.idempotency_key));
        return req.send().then(
          [&ctx, &x, s](capnp::Response<rpc::Session::CreateResults> answer) -> kj::Promise<void> {
            auto info = answer.getInfo();
            auto v = view_of(info);
            if (info.getState() == rpc::SandboxState::FAILED) {
              // Nothing of it is usable: it is deleted (its quota freed) before the answer.
              std::string why = info.getFailure().cStr();
              return answer.getSandbox().deleteRequest().send().ignoreResult().then(
                [v, why]() -> kj::Promise<void> {
                  api::throw_error(errc::internal, "sandbox " + v.id + " failed to start: " + why);
                },
                [v, why](kj::Exception&&) -> kj::Promise<void> {
                  api::throw_error(errc::internal, "sandbox " + v.id + " failed to start: " + why);
                });
            }
            v.envd_access_token = ctx.sealer.seal(v.id, api_key_of(x));
            return x.reply_json(201, sandbox_json(v));
          });
      });
  });
}

kj::Promise<void> get(route_context& ctx, exchange& x, std::string id) {
  return session_of(ctx, x).then([&ctx, &x, id](std::shared_ptr<daemon_session> s) {
    auto req = s->session.getRequest();
    req.setSandboxId(text(id));
    return req.send().then([&ctx, &x, s](capnp::Response<rpc::Session::GetResults> r) {
      auto v = view_of(r.getInfo());
      v.envd_access_token = ctx.sealer.seal(v.id, api_key_of(x));
      return x.reply_json(200, sandbox_detail_json(v));
    });
  });
}

kj::Promise<void> list(route_context& ctx, exchange& x) {
  auto q = parse_list_query(x.param("metadata").value_or(""), x.param("state").value_or(""));
  if (!q)
    api::throw_error(q.err());
  std::uint32_t limit = 100;
  if (auto l = x.param("limit")) {
    auto n = parse_timeout_ms(*l);
    if (!n || *n < 1 || *n > 100)
      api::throw_error(errc::invalid_argument, "limit " + *l + ": give 1 to 100");
    limit = static_cast<std::uint32_t>(*n);
  }
  auto page = x.param("nextToken").value_or("");
  return session_of(ctx, x).then(
    [&x, q = kj::mv(*q), limit, page](std::shared_ptr<daemon_session> s) mutable {
      auto req = s->session.listRequest();
      auto f = req.initFilter();
      std::vector<rpc::SandboxState> states;
      if (q.running)
        states.insert(states.end(), {rpc::SandboxState::CREATING, rpc::SandboxState::RUNNING,
                                     rpc::SandboxState::RESUMING});
      if (q.paused)
        states.insert(states.end(), {rpc::SandboxState::PAUSING, rpc::SandboxState::PAUSED});
      auto st = f.initStates(static_cast<unsigned>(states.size()));
      for (unsigned i = 0; i < states.size(); ++i)
        st.set(i, states[i]);
      auto labels = f.initLabels(static_cast<unsigned>(q.metadata.size()));
      for (unsigned i = 0; i < q.metadata.size(); ++i) {
        labels[i].setKey(text(q.metadata[i].key));
        labels[i].setValue(text(q.metadata[i].value));
      }
      req.setPageToken(text(page));
      req.setLimit(limit);
      return req.send().then([&x, s](capnp::Response<rpc::Session::ListResults> r) {
        // The list is the read model's; each row's end time and state come from its actor
        // (get), all at once. A sandbox deleted since the row was read is left out.
        auto gets =
          kj::heapArrayBuilder<kj::Promise<std::optional<sandbox_view>>>(r.getSandboxes().size());
        for (auto row : r.getSandboxes()) {
          auto g = s->session.getRequest();
          g.setSandboxId(row.getId());
          gets.add(g.send().then(
            [](capnp::Response<rpc::Session::GetResults> got) -> std::optional<sandbox_view> {
              return view_of(got.getInfo());
            },
            [](kj::Exception&&) -> std::optional<sandbox_view> { return std::nullopt; }));
        }
        std::string next = r.getNextPageToken().cStr();
        return kj::joinPromises(gets.finish())
          .then([&x, next](kj::Array<std::optional<sandbox_view>> views) {
            std::vector<sandbox_view> rows;
            for (auto& v : views)
              if (v)
                rows.push_back(std::move(*v));
            std::vector<std::pair<kj::HttpHeaderId, std::string>> extra;
            if (!next.empty())
              extra.emplace_back(x.ids.next_token, next);
            return x.reply(200, "application/json", listed_sandboxes_json(rows), kj::mv(extra));
          });
      });
    });
}

kj::Promise<void> kill(route_context& ctx, exchange& x, std::string id) {
  return session_of(ctx, x).then([&x, id](std::shared_ptr<daemon_session> s) {
    return s->open(id).deleteRequest().send().then([&x, s](auto) { return x.reply(204, "", ""); });
  });
}

kj::Promise<void> set_timeout(route_context& ctx, exchange& x, std::string id) {
  return x.read_body(ctx.limits.max_json_body).then([&ctx, &x, id](std::string body) {
    auto t = parse_timeout_body(body, true);
    if (!t)
      api::throw_error(t.err());
    if (*t->timeout_s > k_max_timeout_s)
      api::throw_error(errc::invalid_argument, "timeout is too long");
    return session_of(ctx, x).then(
      [&x, id, secs = *t->timeout_s](std::shared_ptr<daemon_session> s) {
        auto req = s->open(id).setTimeoutsRequest();
        req.initTimeouts().initTimeout().setNs(secs * k_ns_per_s);
        return req.send().then([&x, s](auto) { return x.reply(204, "", ""); });
      });
  });
}

kj::Promise<void> pause(route_context& ctx, exchange& x, std::string id) {
  return x.read_body(ctx.limits.max_json_body).then([&ctx, &x, id](std::string body) {
    auto t = parse_timeout_body(body, false);
    if (!t)
      api::throw_error(t.err());
    // E2B's pause keeps the memory unless asked not to: sandboxd's memory pause.
    const bool memory = t->memory.value_or(true);
    return session_of(ctx, x).then([&x, id, memory](std::shared_ptr<daemon_session> s) {
      auto req = s->open(id).pauseRequest();
      req.setMode(memory ? schema::PauseMode::MEMORY : schema::PauseMode::FILESYSTEM);
      return req.send().then([&x, s](auto) { return x.reply(204, "", ""); });
    });
  });
}

// Connect: a running sandbox gets its timeout extended (never shortened); a paused one is
// resumed (201) and gets the timeout (300 s when none is given).
kj::Promise<void> connect(route_context& ctx, exchange& x, std::string id) {
  return x.read_body(ctx.limits.max_json_body).then([&ctx, &x, id](std::string body) {
    auto t = parse_timeout_body(body, false);
    if (!t)
      api::throw_error(t.err());
    if (t->timeout_s && *t->timeout_s > k_max_timeout_s)
      api::throw_error(errc::invalid_argument, "timeout is too long");
    return session_of(ctx, x).then([&ctx, &x, id, t = *t](std::shared_ptr<daemon_session> s) {
      auto sandbox = s->open(id);
      return sandbox.infoRequest().send().then(
        [&ctx, &x, s, sandbox,
         t](capnp::Response<rpc::Sandbox::InfoResults> r) mutable -> kj::Promise<void> {
          auto info = r.getInfo();
          const auto state = info.getState();
          const std::int64_t secs = t.timeout_s.value_or(k_default_timeout_s);
          auto answer = [&ctx, &x](unsigned status, sandbox_view v) {
            v.envd_access_token = ctx.sealer.seal(v.id, api_key_of(x));
            return x.reply_json(status, sandbox_json(v));
          };
          auto set_timeout = [sandbox, secs]() mutable {
            auto req = sandbox.setTimeoutsRequest();
            req.initTimeouts().initTimeout().setNs(secs * k_ns_per_s);
            return req.send();
          };
          if (state == rpc::SandboxState::PAUSED) {
            if (t.memory && !*t.memory && info.getPauseMode() == schema::PauseMode::MEMORY)
              api::throw_error(errc::invalid_argument,
                               "sandboxd cannot cold-boot a memory-paused sandbox; connect "
                               "without on_resume=\"reboot\" to resume it with its memory");
            return sandbox.resumeRequest().send().then([set_timeout, answer, s](auto) mutable {
              return set_timeout().then(
                [answer, s](auto r) mutable { return answer(201, view_of(r.getInfo())); });
            });
          }
          if (state == rpc::SandboxState::PAUSING || state == rpc::SandboxState::RESUMING ||
              state == rpc::SandboxState::DELETING)
            api::throw_error(
              errc::conflict,
              "sandbox " + std::string(info.getId().cStr()) + " is " +
                (state == rpc::SandboxState::DELETING ? "being deleted" : "changing state") +
                "; retry once it is done");
          if (state == rpc::SandboxState::FAILED)
            api::throw_error(errc::conflict, "sandbox " + std::string(info.getId().cStr()) +
                                               " failed: " + info.getFailure().cStr());
          const auto end = info.getEndTimeNs();
          if (end != 0 && now_ns() + secs * k_ns_per_s > end)
            return set_timeout().then(
              [answer, s](auto r) mutable { return answer(200, view_of(r.getInfo())); });
          return answer(200, view_of(info));
        });
    });
  });
}

kj::Promise<void> route(route_context& ctx, exchange& x) {
  const std::string_view path = x.path;
  const bool post = x.method == kj::HttpMethod::POST;
  if (path == "/v2/sandboxes" || path == "/sandboxes") {
    if (post)
      return create(ctx, x);
    if (x.method == kj::HttpMethod::GET)
      return list(ctx, x);
  }
  std::string_view rest;
  if (path.rfind("/v2/sandboxes/", 0) == 0)
    rest = after(path, "/v2/sandboxes/");
  else if (path.rfind("/sandboxes/", 0) == 0)
    rest = after(path, "/sandboxes/");
  else
    api::throw_error(errc::not_found,
                     "no route " + std::string(path) + " on sandboxd's E2B endpoint (docs/e2b.md)");
  const auto slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  const std::string_view action = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  if (!plausible_sandbox_id(id))
    api::throw_error(errc::not_found, "sandbox " + id + " does not exist; check the sandbox id");
  if (action.empty() && x.method == kj::HttpMethod::GET)
    return get(ctx, x, id);
  if (action.empty() && x.method == kj::HttpMethod::DELETE)
    return kill(ctx, x, id);
  if (post && action == "timeout")
    return set_timeout(ctx, x, id);
  if (post && action == "pause")
    return pause(ctx, x, id);
  if (post && (action == "connect" || action == "resume"))
    return connect(ctx, x, id);
  api::throw_error(errc::invalid_argument,
                   std::string(x.method == kj::HttpMethod::GET ? "GET " : "") + "/" +
                     std::string(action) +
                     " of a sandbox (metrics, logs, snapshots, forks, network changes) is not "
                     "supported by sandboxd's E2B endpoint (docs/e2b.md)");
}

} // namespace

kj::Promise<void> serve_lifecycle(route_context& ctx, exchange& x) {
  return kj::evalNow([&ctx, &x] { return route(ctx, x); })
    .catch_([&x](kj::Exception&& e) -> kj::Promise<void> {
      if (x.responded())
        kj::throwFatalException(kj::mv(e));
      return answer_failure(x, e);
    });
}

} // namespace sandboxd::e2b
