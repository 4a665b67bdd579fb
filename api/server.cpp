// server.cpp — the event-loop thread, listening, connections and shutdown of api::server.
#include "api/server.hpp"

#include "api/address.hpp"
#include "api/buffered_stream.hpp"
#include "api/service_context.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/compat/tls.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <future>
#include <list>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sandboxd::api {
namespace {

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(std::string("cannot read the TLS ") + what + " file " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A socket file left by a process that is gone is removed; one that answers is in use.
void claim_socket_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return;
  if (!S_ISSOCK(st.st_mode))
    throw std::runtime_error("cannot listen on unix:" + path +
                             ": the path exists and is not a socket; choose another path");
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path)
    throw std::runtime_error("unix socket path " + path + " is too long; use a shorter one");
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool answers = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  if (fd >= 0)
    ::close(fd);
  if (answers)
    throw std::runtime_error("cannot listen on unix:" + path +
                             ": another process serves it; stop it or choose another path");
  ::unlink(path.c_str());
}

} // namespace

struct connection {
  connection(service_context& ctx, std::shared_ptr<service_context> shared,
             std::shared_ptr<connection_state> st, kj::Own<kj::AsyncIoStream> s,
             capnp::ReaderOptions reader_options)
      : ctx(ctx), state(std::move(st)), stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER, reader_options),
        rpc(capnp::makeRpcServer(network, make_gateway(std::move(shared), state))) {}
  ~connection() {
    if (!state->authenticated)
      --ctx.unauthenticated;
    for (const auto& t : state->tenants)
      if (auto it = ctx.connections_by_tenant.find(t);
          it != ctx.connections_by_tenant.end() && --it->second == 0)
        ctx.connections_by_tenant.erase(it);
  }

  // Ends the connection (its task completes and destroys it): once.
  void drop() {
    if (dropping)
      return;
    dropping = true;
    closed->fulfill();
  }

  service_context& ctx;
  std::shared_ptr<connection_state> state;
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
  kj::Own<kj::PromiseFulfiller<void>> closed;
  bool dropping = false;
};

// The TCP peer's address without its port ("" for a unix socket or when unknown).
std::string peer_of(kj::AsyncIoStream& s) {
  sockaddr_storage sa{};
  kj::uint len = sizeof sa;
  try {
    s.getpeername(reinterpret_cast<sockaddr*>(&sa), &len);
  } catch (const kj::Exception&) {
    return {};
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (sa.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&sa)->sin_addr, text, sizeof text);
  else if (sa.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&sa)->sin6_addr, text, sizeof text);
  return text;
}

struct server::impl : kj::TaskSet::ErrorHandler {
  server_options options;
  tenant_ledger ledger;
  snapshot_registry snapshots;
  std::unique_ptr<log_follower> follower;
  std::unique_ptr<read_store> store;
  std::unique_ptr<worker_pool> workers;
  std::unique_ptr<worker_pool> template_workers;
  std::vector<std::string> bound;
  std::vector<std::string> socket_paths;
  std::thread thread;

  // Loop thread only.
  std::shared_ptr<service_context> ctx;
  std::map<std::uint64_t, connection*> connections; // by id: the order they came in
  std::uint64_t next_connection = 0;
  const kj::Executor* executor = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> stop;

  explicit impl(server_options o) : options(std::move(o)), ledger(options.defaults.limits) {}

  void taskFailed(kj::Exception&& e) override {
    // A connection that failed (a malformed message, a reset) is already gone.
    (void)e;
  }

  // Makes room for one more connection with no token yet: past the caps, the oldest such
  // connection (of the same address, for the per-address cap) is closed. An honest client
  // authenticates within a round trip, so only connections that sit idle are pushed out.
  void make_room_for_unauthenticated(const std::string& peer) {
    std::size_t waiting = 0, from_peer = 0;
    connection* oldest = nullptr;
    connection* oldest_of_peer = nullptr;
    for (auto& [id, c] : connections) {
      if (c->state->authenticated || c->dropping)
        continue;
      ++waiting;
      if (!oldest)
        oldest = c;
      if (!peer.empty() && c->state->peer == peer) {
        ++from_peer;
        if (!oldest_of_peer)
          oldest_of_peer = c;
      }
    }
    if (!peer.empty() && from_peer >= options.max_unauthenticated_per_address)
      oldest_of_peer->drop();
    else if (waiting >= options.max_unauthenticated_connections && oldest)
      oldest->drop();
  }

  kj::Promise<void> accept_loop(kj::ConnectionReceiver& listener, kj::TaskSet& tasks) {
    return listener.accept().then([this, &listener, &tasks](kj::Own<kj::AsyncIoStream> s) {
      if (connections.size() - ctx->unauthenticated < options.max_connections) {
        capnp::ReaderOptions ro;
        ro.traversalLimitInWords = options.max_message_bytes / sizeof(capnp::word);
        auto st = std::make_shared<connection_state>();
        st->id = ++next_connection;
        st->peer = peer_of(*s);
        make_room_for_unauthenticated(st->peer);
        auto c = kj::heap<connection>(*ctx, ctx, st, kj::heap<buffered_stream>(kj::mv(s)), ro);
        ++ctx->unauthenticated;
        auto closed = kj::newPromiseAndFulfiller<void>();
        c->closed = kj::mv(closed.fulfiller);
        auto* raw = c.get();
        const auto id = st->id;
        connections.emplace(id, raw);
        tasks.add(c->network.onDisconnect()
                    .exclusiveJoin(kj::mv(closed.promise))
                    .attach(kj::mv(c), kj::defer([this, id] { connections.erase(id); })));
        // No token in time: closed.
        tasks.add(ctx->timer->afterDelay(options.authentication_deadline.count() * kj::MILLISECONDS)
                    .then([this, id] {
                      auto it = connections.find(id);
                      if (it != connections.end() && !it->second->state->authenticated)
                        it->second->drop();
                    }));
      } // else: dropped at once; the client sees the connection close
      return accept_loop(listener, tasks);
    });
  }

  void run(std::promise<void>& ready) {
    ::pthread_setname_np(::pthread_self(), "sbd-rpc");
    bool started = false;
    try {
      auto io = kj::setupAsyncIo();
      executor = &kj::getCurrentThreadExecutor();
      auto tasks_owner = kj::heap<kj::TaskSet>(*this);
      auto& tasks = *tasks_owner;
      loop_bridge bridge(io.unixEventPort);
      stream_wakeups wakeups(options.log->partitions());
      workers = std::make_unique<worker_pool>(options.worker_threads);
      template_workers = std::make_unique<worker_pool>(2, "sbd-templates");
      if (!options.pg_conninfo.empty())
        store = std::make_unique<read_store>(options.pg_conninfo, options.pg_schema);
      follower = std::make_unique<log_follower>(
        *options.log, ledger, [&bridge, &wakeups](std::int32_t p, std::int64_t next) {
          bridge.post([&wakeups, p, next] { wakeups.advanced(p, next); });
        });
      follower->follow_snapshots(snapshots);
      follower->catch_up();
      for (std::int32_t p = 0; p < options.log->partitions(); ++p)
        wakeups.advanced(p, follower->position(p));

      ctx = std::make_shared<service_context>();
      ctx->options = options;
      ctx->plane = options.plane;
      ctx->log = options.log;
      ctx->auth = options.auth;
      ctx->timer = &io.provider->getTimer();
      ctx->bridge = &bridge;
      ctx->ledger = &ledger;
      ctx->snapshots = &snapshots;
      ctx->follower = follower.get();
      ctx->store = store.get();
      ctx->workers = workers.get();
      ctx->template_workers = template_workers.get();
      ctx->wakeups = &wakeups;

      kj::Maybe<kj::Own<kj::TlsContext>> tls;
      std::vector<kj::Own<kj::ConnectionReceiver>> listeners;
      for (const auto& text : options.listen) {
        auto a = parse_address(text);
        if (!a)
          throw std::invalid_argument(a.err().message);
        if (a->type == address::kind::unix_socket) {
          claim_socket_path(a->path);
          socket_paths.push_back(a->path);
        }
        auto where = io.provider->getNetwork().parseAddress(a->kj_form()).wait(io.waitScope);
        auto listener = where->listen();
        const bool use_tls =
          a->type == address::kind::tcp && (!a->loopback() || options.tls_on_loopback);
        if (use_tls) {
          if (tls == nullptr) {
            if (options.tls_certificate_file.empty() || options.tls_key_file.empty())
              throw std::invalid_argument(
                "listening on " + text +
                " needs TLS (the address is not loopback): give a certificate and a key file");
            auto cert = read_file(options.tls_certificate_file, "certificate");
            auto key = read_file(options.tls_key_file, "key");
            kj::TlsKeypair pair{kj::TlsPrivateKey(key.c_str()), kj::TlsCertificate(cert.c_str())};
            kj::TlsContext::Options o;
            o.defaultKeypair = pair;
            tls = kj::heap<kj::TlsContext>(kj::mv(o));
          }
          KJ_IF_MAYBE (t, tls)
            listener = (*t)->wrapPort(kj::mv(listener));
        }
        if (a->type == address::kind::tcp) {
          a->port = static_cast<std::uint16_t>(listener->getPort());
          bound.push_back(a->str());
        } else {
          bound.push_back(a->str());
        }
        listeners.push_back(kj::mv(listener));
      }
      for (auto& l : listeners)
        tasks.add(accept_loop(*l, tasks));

      // Started last: from here on it posts into the bridge, which must outlive it (an
      // exception above unwinds the bridge with no follower thread running).
      follower->start();
      auto paf = kj::newPromiseAndFulfiller<void>();
      stop = kj::mv(paf.fulfiller);
      started = true;
      ready.set_value();
      paf.promise.wait(io.waitScope);

      // Shutdown: no new connections, every connection dropped (clients see DISCONNECTED),
      // then the threads that post into the loop, then the loop's own objects.
      listeners.clear();
      tasks_owner = nullptr; // the accept loops and every connection
      connections.clear();
      follower->stop();
      workers.reset();
      template_workers.reset(); // waits for a stock template build in progress
      ctx.reset();
    } catch (...) {
      if (follower)
        follower->stop();
      workers.reset();
      template_workers.reset();
      if (!started)
        ready.set_exception(std::current_exception());
      else
        throw;
    }
    for (const auto& p : socket_paths)
      ::unlink(p.c_str());
  }
};

server::server(server_options options) : impl_(std::make_unique<impl>(std::move(options))) {
  auto& m = *impl_;
  if (!m.options.plane || !m.options.log || !m.options.auth)
    throw std::invalid_argument("api::server needs a control plane, its log and an authenticator");
  if (m.options.listen.empty())
    throw std::invalid_argument("api::server needs at least one address to listen on");
  std::promise<void> ready;
  auto started = ready.get_future();
  m.thread = std::thread([&m, &ready] { m.run(ready); });
  try {
    started.get();
  } catch (...) {
    m.thread.join();
    throw;
  }
}

server::~server() {
  auto& m = *impl_;
  m.executor->executeSync([&m] { m.stop->fulfill(); });
  m.thread.join();
}

std::vector<std::string> server::addresses() const {
  return impl_->bound;
}

server_stats server::stats() const {
  auto& m = *impl_;
  return m.executor->executeSync([&m] {
    server_stats s;
    s.connections = m.connections.size();
    if (m.ctx) {
      s.calls_in_flight = m.ctx->calls_in_flight;
      s.streams = m.ctx->streams;
      s.stream_events_sent = m.ctx->stream_events_sent;
    }
    for (auto& [id, c] : m.connections)
      s.outgoing_queue_bytes += c->network.getCurrentQueueSize();
    return s;
  });
}

tenant_usage server::usage(const std::string& tenant) const {
  return impl_->ledger.usage(tenant);
}

bool server::admits_log(const std::string& tenant) const {
  const auto& o = impl_->options;
  auto it = o.quotas.find(tenant);
  const auto& quota = it == o.quotas.end() ? o.quota : it->second;
  return impl_->ledger.admit_log(tenant, quota, std::chrono::system_clock::now()).ok();
}

} // namespace sandboxd::api
