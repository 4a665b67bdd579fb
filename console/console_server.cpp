// The console's HTTP wiring: cpp-httplib routes onto console_reads, with the policies of
// http_policy.hpp before every route and the session of session_table.hpp around each.
#include "console/console_server.hpp"

#include "console/assets.hpp"
#include "console/console_reads.hpp"
#include "console/http_error.hpp"
#include "console/http_policy.hpp"
#include "console/request_args.hpp"
#include "console/routes.hpp"
#include "node/node.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <thread>

namespace sandboxd::console {
namespace {

using steady = std::chrono::steady_clock;
constexpr std::size_t k_max_body = 16 * 1024;

// The instant of the node's clock (the control plane's: the one events are stamped with),
// so relative periods (from=-24h) mean what they mean to sandboxctl talking to this node.
events::time_point now_of(node::node& n) {
  return n.config().plane.clock
           ? n.config().plane.clock()
           : std::chrono::time_point_cast<events::nanoseconds>(std::chrono::system_clock::now());
}

void send_error(httplib::Response& res, const error& e, int status = 0) {
  res.status = status ? status : http_status(e.code);
  res.set_header("Cache-Control", "no-store");
  res.set_content(error_json(e), "application/json; charset=utf-8");
}

void send_json(httplib::Response& res, const cli::json& doc, steady::time_point started) {
  res.status = 200;
  res.set_header("Cache-Control", "no-store");
  char timing[64];
  std::snprintf(timing, sizeof timing, "app;dur=%.3f",
                std::chrono::duration<double, std::milli>(steady::now() - started).count());
  res.set_header("Server-Timing", timing);
  res.set_content(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json; charset=utf-8");
}

template <class T>
bool failed(httplib::Response& res, const result<T>& r) {
  if (r.ok())
    return false;
  send_error(res, r.err());
  return true;
}

// A file name for a Content-Disposition header: what is not a letter, digit, '.', '-' or
// '_' becomes '_' (a tenant's name cannot add a header or a path).
std::string safe_file_name(std::string_view s) {
  std::string out;
  for (char c : s)
    out.push_back(
      std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_');
  return out.substr(0, 120);
}

} // namespace

struct console_server::impl {
  console_options o;
  bool tls = false;
  bool loopback = true;
  std::unique_ptr<httplib::Server> http;
  std::unique_ptr<console_reads> reads;
  session_table sessions;
  std::thread loop;
  int port = 0;

  explicit impl(console_options options) : o(std::move(options)), sessions(o.sessions) {}

  std::optional<api::identity> session_of(const httplib::Request& req) {
    auto id = cookie_value(req.get_header_value("Cookie"), session_cookie_name(tls));
    if (!id)
      return std::nullopt;
    return sessions.find(*id, clock::now());
  }

  // Runs `body` for the signed-in identity, or answers 401.
  void with_session(const httplib::Request& req, httplib::Response& res,
                    const std::function<void(const api::identity&)>& body) {
    auto who = session_of(req);
    if (!who) {
      send_error(res, no_session_error(), 401);
      return;
    }
    body(*who);
  }

  using handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  std::map<std::string_view, handler> handlers();
  void start();
};

std::map<std::string_view, console_server::impl::handler> console_server::impl::handlers() {
  std::map<std::string_view, handler> h;
  h["page"] = [](const httplib::Request& req, httplib::Response& res) {
    const auto* a = find_asset("index.html");
    if (req.get_header_value("If-None-Match") == a->etag) {
      res.status = 304;
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("ETag", std::string(a->etag));
    res.set_content(std::string(a->body), std::string(a->content_type).c_str());
  };
  h["asset"] = [](const httplib::Request& req, httplib::Response& res) {
    const std::string path = req.matches[1];
    const auto* a = path.find("..") == std::string::npos ? find_asset(path) : nullptr;
    if (!a || path == "index.html") {
      send_error(res, make_error(errc::not_found, "the console has no file " + path));
      return;
    }
    if (req.get_header_value("If-None-Match") == a->etag) {
      res.status = 304;
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("ETag", std::string(a->etag));
    res.set_content(std::string(a->body), std::string(a->content_type).c_str());
  };
  h["login"] = [this](const httplib::Request& req, httplib::Response& res) {
    const auto type = req.get_header_value("Content-Type");
    if (type.rfind("application/json", 0) != 0) {
      send_error(res,
                 make_error(errc::invalid_argument, "sign in with a JSON body {\"token\": \"...\"} "
                                                    "(Content-Type: application/json)"));
      return;
    }
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("token") ||
        !body["token"].is_string()) {
      send_error(
        res, make_error(errc::invalid_argument, "sign in with a JSON body {\"token\": \"...\"}"));
      return;
    }
    auto who = o.auth->lookup(body["token"].get<std::string>());
    if (!who) {
      spdlog::warn("console: a sign-in from {} with an unknown token was refused", req.remote_addr);
      send_error(res, make_error(errc::permission_denied,
                                 "the token is not one this sandboxd knows; check it (the "
                                 "tokens file, or DATA_DIR/dev-token for the development "
                                 "token) and sign in again"));
      return;
    }
    auto id = sessions.open(*who, clock::now());
    if (failed(res, id))
      return;
    spdlog::info("console: principal {} of tenant {} signed in from {}", who->principal,
                 who->tenant, req.remote_addr);
    res.set_header("Set-Cookie", session_cookie(*id, tls));
    send_json(
      res,
      cli::json{{"tenant", who->tenant}, {"principal", who->principal}, {"scopes", who->scopes}},
      steady::now());
  };
  h["logout"] = [this](const httplib::Request& req, httplib::Response& res) {
    // The cookie goes either way; a session that was live ends.
    res.set_header("Set-Cookie", cleared_session_cookie(tls));
    with_session(req, res, [&](const api::identity& who) {
      if (auto id = cookie_value(req.get_header_value("Cookie"), session_cookie_name(tls)))
        sessions.close(*id);
      spdlog::info("console: principal {} of tenant {} signed out", who.principal, who.tenant);
      send_json(res, cli::json{{"signed_out", true}}, steady::now());
    });
  };
  h["session"] = [this](const httplib::Request& req, httplib::Response& res) {
    auto who = session_of(req);
    if (!who) {
      send_json(res, cli::json{{"signed_in", false}}, steady::now());
      return;
    }
    send_json(res,
              cli::json{{"signed_in", true},
                        {"tenant", who->tenant},
                        {"principal", who->principal},
                        {"scopes", who->scopes}},
              steady::now());
  };
  h["sandboxes"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto q = parse_list_request(req.params);
      if (failed(res, q))
        return;
      auto doc = reads->sandboxes(who, *q);
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  h["timeline"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto doc = reads->timeline(who, req.matches[1]);
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  h["state"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto seq = parse_sequence(req.params);
      if (failed(res, seq))
        return;
      auto doc = reads->state(who, req.matches[1], *seq);
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  h["bill"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto q = parse_bill_request(req.params, now_of(*o.node));
      if (failed(res, q))
        return;
      auto doc = reads->bill(who, *q);
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  h["bill_csv"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      auto q = parse_bill_request(req.params, now_of(*o.node));
      if (failed(res, q))
        return;
      auto csv = reads->bill_csv(who, *q);
      if (failed(res, csv))
        return;
      const std::string tenant = q->tenant.empty() ? who.tenant : q->tenant;
      res.set_header("Cache-Control", "no-store");
      res.set_header("Content-Disposition",
                     "attachment; filename=\"bill-" + safe_file_name(tenant) + ".csv\"");
      res.set_content(*csv, "text/csv; charset=utf-8");
    });
  };
  h["audit"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto q = parse_audit_request(req.params, now_of(*o.node));
      if (failed(res, q))
        return;
      auto doc = reads->audit(who, *q);
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  h["audit_verify"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto doc = reads->audit_verify(who, param(req.params, "tenant"));
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  h["node"] = [this](const httplib::Request& req, httplib::Response& res) {
    with_session(req, res, [&](const api::identity& who) {
      const auto t0 = steady::now();
      auto doc = reads->node_figures(who);
      if (!failed(res, doc))
        send_json(res, *doc, t0);
    });
  };
  return h;
}

void console_server::impl::start() {
  if (!o.node || !o.auth)
    throw std::invalid_argument("console_server needs a node and an authenticator");
  if (o.tls_certificate_file.empty() != o.tls_key_file.empty())
    throw std::runtime_error("TLS needs both a certificate and a key");
  tls = !o.tls_certificate_file.empty();
  loopback = o.host == "localhost" || o.host == "::1" || o.host.rfind("127.", 0) == 0;
  if (tls) {
    auto s =
      std::make_unique<httplib::SSLServer>(o.tls_certificate_file.c_str(), o.tls_key_file.c_str());
    if (!s->is_valid())
      throw std::runtime_error("the TLS certificate " + o.tls_certificate_file + " or key " +
                               o.tls_key_file +
                               " does not load (PEM files, the key matching the certificate); "
                               "check --tls-cert and --tls-key");
    http = std::move(s);
  } else {
    http = std::make_unique<httplib::Server>();
  }
  reads = std::make_unique<console_reads>(*o.node);
  const std::size_t threads = std::max<std::size_t>(1, o.threads);
  http->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http->set_payload_max_length(k_max_body);
  http->set_read_timeout(5, 0);
  http->set_write_timeout(5, 0);
  http->set_keep_alive_timeout(5);
  http->set_keep_alive_max_count(100);

  http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    for (const auto& [k, v] : security_headers())
      res.set_header(k, v);
    request_facts f;
    f.method = req.method;
    f.path = req.path;
    const std::string host = req.get_header_value("Host");
    const std::string origin = req.get_header_value("Origin");
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    f.host = host;
    f.origin = origin;
    f.sec_fetch_site = site;
    f.listening_on_loopback = loopback;
    f.tls = tls;
    if (auto no = refuse_before_routing(f)) {
      res.status = no->status;
      res.set_header("Cache-Control", "no-store");
      res.set_content(error_json({no->code, no->message}), "application/json; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty())
      return;
    if (res.status == 404)
      res.set_content(
        error_json(make_error(errc::not_found, "the console has no page or route " + req.path +
                                                 "; open / for the console")),
        "application/json; charset=utf-8");
    else if (res.status == 413)
      res.set_content(error_json(make_error(errc::too_large, "the request body is larger than "
                                                             "the console takes (16 KiB)")),
                      "application/json; charset=utf-8");
    else if (res.status == 405 || res.status == 400)
      res.set_content(
        error_json(make_error(errc::invalid_argument, "the console does not answer this request (" +
                                                        req.method + " " + req.path + ")")),
        "application/json; charset=utf-8");
  });
  http->set_exception_handler(
    [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      spdlog::error("console: {} {} failed: {}", req.method, req.path, what);
      send_error(res, make_error(errc::internal, "the console failed to answer " + req.path + " (" +
                                                   what + "); the daemon's log has it"));
    });

  auto h = handlers();
  for (const auto& r : routes()) {
    auto it = h.find(r.name);
    if (it == h.end())
      throw std::logic_error("console route " + std::string(r.name) + " has no handler");
    const std::string pattern(r.pattern);
    if (r.method == "GET")
      http->Get(pattern, it->second);
    else
      http->Post(pattern, it->second);
  }

  // Port 0: one the kernel picks (tests); url() says which.
  const bool bound = o.port == 0 ? (port = http->bind_to_any_port(o.host)) > 0
                                 : http->bind_to_port(o.host, port = o.port);
  if (!bound)
    throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                             " (the port is taken, or the address is not this host's); choose "
                             "another --console-addr");
  loop = std::thread([this] { http->listen_after_bind(); });
}

console_server::console_server(console_options options)
    : impl_(std::make_unique<impl>(std::move(options))) {
  impl_->start();
}

console_server::~console_server() {
  if (impl_->http)
    impl_->http->stop();
  if (impl_->loop.joinable())
    impl_->loop.join();
}

std::string console_server::url() const {
  const bool v6 = impl_->o.host.find(':') != std::string::npos;
  return std::string(impl_->tls ? "https://" : "http://") +
         (v6 ? "[" + impl_->o.host + "]" : impl_->o.host) + ":" + std::to_string(impl_->port) + "/";
}

} // namespace sandboxd::console
