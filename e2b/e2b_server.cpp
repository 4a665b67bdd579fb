#include "e2b/e2b_server.hpp"

#include "api/address.hpp"
#include "e2b/routes.hpp"

#include <kj/async-io.h>
#include <kj/compat/tls.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sandboxd::e2b {

namespace {

kj::Duration to_kj(std::chrono::milliseconds ms) {
  return ms.count() * kj::MILLISECONDS;
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(std::string("cannot read the TLS ") + what + " " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The peer's address without its port: connections are counted per address.
std::string peer_of(kj::AsyncIoStream& s) {
  sockaddr_storage a{};
  kj::uint n = sizeof a;
  try {
    s.getpeername(reinterpret_cast<sockaddr*>(&a), &n);
  } catch (...) {
    return "?";
  }
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, buf, sizeof buf);
  else
    return "local";
  return buf;
}

class service final : public kj::HttpService {
public:
  service(route_context& ctx, const kj::HttpHeaderTable& table, const header_ids& ids,
          kj::Timer& timer, const e2b_limits& limits)
      : ctx_(ctx), table_(table), ids_(ids), timer_(timer), limits_(limits) {}

  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url,
                            const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                            Response& response) override {
    auto x =
      kj::heap<exchange>(method, url, headers, body, response, table_, ids_, timer_, limits_);
    auto& ex = *x;
    return dispatch(ex).attach(kj::mv(x));
  }

private:
  kj::Promise<void> dispatch(exchange& x) {
    const std::string_view path = x.path;
    constexpr std::string_view process = "/process.Process/";
    constexpr std::string_view filesystem = "/filesystem.Filesystem/";
    if (path.rfind(process, 0) == 0 || path.rfind(filesystem, 0) == 0) {
      if (x.method != kj::HttpMethod::POST)
        return x.reply_json(405, error_body({connect_code::unimplemented,
                                             "envd's calls are POSTs (the Connect protocol)"}));
      if (path.rfind(process, 0) == 0)
        return serve_process(ctx_, x, std::string(path.substr(process.size())));
      return serve_filesystem(ctx_, x, std::string(path.substr(filesystem.size())));
    }
    if (path == "/files")
      return serve_files(ctx_, x);
    if (path == "/health")
      return serve_health(ctx_, x);
    return serve_lifecycle(ctx_, x);
  }

  route_context& ctx_;
  const kj::HttpHeaderTable& table_;
  const header_ids& ids_;
  kj::Timer& timer_;
  const e2b_limits& limits_;
};

} // namespace

struct e2b_server::impl {
  e2b_options options;
  std::string url;
  std::thread thread;
  const kj::Executor* executor = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> stop;

  void run(std::promise<std::string>& ready);
};

void e2b_server::impl::run(std::promise<std::string>& ready) {
  auto io = kj::setupAsyncIo();
  auto& timer = io.provider->getTimer();
  const auto& limits = options.limits;
  kj::HttpHeaderTable::Builder builder;
  header_ids ids(builder);
  auto table = builder.build();

  kj::Own<kj::TlsContext> tls;
  kj::Own<kj::ConnectionReceiver> listener;
  std::unique_ptr<token_sealer> sealer;
  try {
    sealer = std::make_unique<token_sealer>(token_sealer::load_or_make_key(options.token_key_file));
    api::address where;
    where.type = api::address::kind::tcp;
    where.host = options.host;
    where.port = options.port;
    if (!where.loopback()) {
      if (options.tls_certificate_file.empty() || options.tls_key_file.empty())
        throw std::runtime_error("the E2B endpoint on " + options.host +
                                 " is not loopback: it is served over TLS only; give "
                                 "--tls-cert and --tls-key");
      auto cert = read_file(options.tls_certificate_file, "certificate");
      auto key = read_file(options.tls_key_file, "key");
      kj::TlsKeypair pair{kj::TlsPrivateKey(key.c_str()), kj::TlsCertificate(cert.c_str())};
      kj::TlsContext::Options o;
      o.defaultKeypair = pair;
      tls = kj::heap<kj::TlsContext>(kj::mv(o));
    }
    auto addr = io.provider->getNetwork().parseAddress(where.kj_form()).wait(io.waitScope);
    listener = addr->listen();
    url = std::string(tls ? "https://" : "http://") +
          (where.host.find(':') != std::string::npos ? "[" + where.host + "]" : where.host) + ":" +
          std::to_string(listener->getPort());
  } catch (const kj::Exception& e) {
    ready.set_exception(std::make_exception_ptr(std::runtime_error(e.getDescription().cStr())));
    return;
  } catch (...) {
    ready.set_exception(std::current_exception());
    return;
  }

  daemon_link link(*io.provider, timer, options.daemon_address, limits);
  process_table processes;
  route_context ctx{link, processes, *sealer, limits};
  service svc(ctx, *table, ids, timer, limits);
  kj::HttpServerSettings settings;
  settings.headerTimeout = to_kj(limits.header_timeout);
  settings.pipelineTimeout = to_kj(limits.body_idle_timeout);
  kj::HttpServer server(timer, *table, svc, settings);

  struct connection_counts {
    std::size_t total = 0;
    std::map<std::string, std::size_t> by_address;
  } counts;
  struct ignore final : kj::TaskSet::ErrorHandler {
    void taskFailed(kj::Exception&&) override {}
  } ignore_errors;
  kj::TaskSet connections(ignore_errors);

  struct acceptor {
    static kj::Promise<void> loop(kj::ConnectionReceiver& l, kj::HttpServer& server,
                                  kj::TlsContext* tls, kj::Timer& timer, const e2b_limits& limits,
                                  connection_counts& counts, kj::TaskSet& connections) {
      return l.accept().then([&l, &server, tls, &timer, &limits, &counts,
                              &connections](kj::Own<kj::AsyncIoStream> conn) {
        auto peer = peer_of(*conn);
        auto& mine = counts.by_address[peer];
        if (counts.total >= limits.max_connections || mine >= limits.max_connections_per_address) {
          // Refused: closed before a byte is read.
          if (mine == 0)
            counts.by_address.erase(peer);
        } else {
          ++counts.total;
          ++mine;
          auto slot = kj::defer([&counts, peer] {
            --counts.total;
            auto it = counts.by_address.find(peer);
            if (it != counts.by_address.end() && --it->second == 0)
              counts.by_address.erase(it);
          });
          kj::Promise<kj::Own<kj::AsyncIoStream>> stream = kj::mv(conn);
          if (tls)
            stream = stream
                       .then([tls](kj::Own<kj::AsyncIoStream> raw) {
                         return tls->wrapServer(kj::mv(raw));
                       })
                       .exclusiveJoin(timer.afterDelay(to_kj(limits.tls_handshake_timeout))
                                        .then([]() -> kj::Own<kj::AsyncIoStream> {
                                          KJ_FAIL_REQUIRE("TLS handshake timed out");
                                        }));
          connections.add(stream
                            .then([&server](kj::Own<kj::AsyncIoStream> s) {
                              return server.listenHttp(kj::mv(s));
                            })
                            .attach(kj::mv(slot)));
        }
        return loop(l, server, tls, timer, limits, counts, connections);
      });
    }
  };

  auto paf = kj::newPromiseAndFulfiller<void>();
  stop = kj::mv(paf.fulfiller);
  executor = &kj::getCurrentThreadExecutor();
  ready.set_value(url);
  auto serving = acceptor::loop(*listener, server, tls.get(), timer, limits, counts, connections);
  paf.promise.exclusiveJoin(kj::mv(serving)).wait(io.waitScope);
}

e2b_server::e2b_server(e2b_options options) : impl_(std::make_unique<impl>()) {
  impl_->options = std::move(options);
  std::promise<std::string> ready;
  auto url = ready.get_future();
  impl_->thread = std::thread([this, &ready] {
    try {
      impl_->run(ready);
    } catch (...) {
      // run() reports start-up failures itself; a fault after start ends the endpoint.
    }
  });
  try {
    impl_->url = url.get();
  } catch (...) {
    impl_->thread.join();
    throw;
  }
  if (const auto& file = impl_->options.endpoint_file; !file.empty()) {
    std::ofstream out(file + ".tmp", std::ios::trunc);
    out << "url=" << impl_->url << "\n";
    if (impl_->url.rfind("https:", 0) == 0)
      out << "ca_file=" << impl_->options.tls_certificate_file << "\n";
    out.close();
    std::filesystem::rename(file + ".tmp", file);
  }
}

e2b_server::~e2b_server() {
  if (!impl_->options.endpoint_file.empty())
    std::filesystem::remove(impl_->options.endpoint_file);
  if (impl_->executor)
    impl_->executor->executeSync([this] { impl_->stop->fulfill(); });
  impl_->thread.join();
}

std::string e2b_server::url() const {
  return impl_->url;
}

} // namespace sandboxd::e2b
