#include "api/client.hpp"

#include "api/address.hpp"
#include "api/buffered_stream.hpp"
#include "api/convert.hpp"
#include "api/rpc_error.hpp"
#include "schemas/api.capnp.h"

#include <capnp/message.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/serialize.h>
#include <kj/async-io.h>
#include <kj/compat/tls.h>

#include <fstream>
#include <sstream>

namespace sandboxd::api {
namespace {

// The most one Upload.write carries: the daemon refuses a larger chunk (docs/api.md "Limits").
constexpr std::size_t k_upload_chunk_bytes = 1u << 20;

// A std::string as Cap'n Proto Text, whole: kj::StringPtr's own conversion stops at the first
// NUL, which would send a shortened label, argument or path instead of the one given (the
// daemon refuses a NUL where it is not allowed, naming the field).
kj::StringPtr whole(const std::string& s) {
  return {s.data(), s.size()};
}

// What sandboxd reads in one request unless configured otherwise (server_options'
// max_message_bytes); client_options' max_message_bytes mirrors it. A call's envelope is a few
// words more than its parameters: 4 KiB covers it.
constexpr std::size_t k_daemon_message_bytes = 16u << 20;
constexpr std::size_t k_envelope_bytes = 4096;
constexpr const char* k_large_content_advice =
  "send large content as a file (write_file streams it in pieces) or as streamed stdin";

template <class T, class F>
result<T> guarded(F&& f) {
  try {
    if constexpr (std::is_void_v<T>) {
      f();
      return {};
    } else {
      return f();
    }
  } catch (const kj::Exception& e) {
    return from_exception(e);
  }
}

void set_limits(schema::Limits::Builder b, const events::sandbox_limits& l) {
  b.setMemoryMib(l.memory_mib);
  b.setCpuMillicores(l.cpu_millicores);
  b.setPids(l.pids);
  b.setDiskMib(l.disk_mib);
}

events::sandbox_limits limits_of(schema::Limits::Reader r) {
  return {r.getMemoryMib(), r.getCpuMillicores(), r.getPids(), r.getDiskMib()};
}

std::vector<events::label> labels_of(capnp::List<schema::Label>::Reader r) {
  std::vector<events::label> out;
  for (auto l : r)
    out.push_back({l.getKey().cStr(), l.getValue().cStr()});
  return out;
}

void set_labels(capnp::List<schema::Label>::Builder b, const std::vector<events::label>& labels) {
  for (unsigned i = 0; i < labels.size(); ++i) {
    b[i].setKey(whole(labels[i].key));
    b[i].setValue(whole(labels[i].value));
  }
}

void set_timeouts(rpc::TimeoutSettings::Builder b, const timeout_change& t) {
  if (t.timeout)
    b.initTimeout().setNs(t.timeout->count());
  if (t.idle_timeout)
    b.initIdleTimeout().setNs(t.idle_timeout->count());
  if (t.lifetime)
    b.initLifetime().setNs(t.lifetime->count());
  if (t.paused_retention)
    b.initPausedRetention().setNs(t.paused_retention->count());
  if (t.on_idle) {
    if (*t.on_idle)
      b.initOnTimeout().setPause(**t.on_idle == events::pause_mode::memory
                                   ? schema::PauseMode::MEMORY
                                   : schema::PauseMode::FILESYSTEM);
    else
      b.initOnTimeout().setDelete();
  }
}

void set_env(capnp::List<rpc::EnvVar>::Builder b, const std::vector<events::env_var>& env) {
  for (unsigned i = 0; i < env.size(); ++i) {
    b[i].setName(whole(env[i].name));
    b[i].setValue(whole(env[i].value));
    b[i].setSecret(env[i].secret);
  }
}

void set_exec_request(rpc::ExecRequest::Builder b, const exec_options& o) {
  auto argv = b.initArgv(static_cast<unsigned>(o.argv.size()));
  for (unsigned i = 0; i < o.argv.size(); ++i)
    argv.set(i, whole(o.argv[i]));
  set_env(b.initEnv(static_cast<unsigned>(o.env.size())), o.env);
  b.setCwd(whole(o.cwd));
  b.setUser(whole(o.user));
  b.setStdin(
    kj::arrayPtr(reinterpret_cast<const kj::byte*>(o.stdin_bytes.data()), o.stdin_bytes.size()));
  b.setTimeoutNs(o.timeout.count());
  b.setMaxOutputBytes(o.max_output_bytes);
}

exec_result exec_result_of(rpc::ExecResult::Reader r) {
  exec_result x;
  x.exec_id = r.getExecId().cStr();
  x.exit_code = r.getExitCode();
  x.signal = r.getSignal();
  x.timed_out = r.getTimedOut();
  x.oom_killed = r.getOomKilled();
  x.output_truncated = r.getOutputTruncated();
  x.interrupted = r.getInterrupted();
  x.duration_ns = r.getDurationNs();
  x.stdout_bytes = r.getStdoutBytes();
  x.stderr_bytes = r.getStderrBytes();
  return x;
}

exec_info exec_info_of(rpc::ExecInfo::Reader r) {
  exec_info x;
  x.exec_id = r.getExecId().cStr();
  for (auto a : r.getArgv())
    x.argv.emplace_back(a.cStr());
  x.started_at_ns = r.getStartedAtNs();
  return x;
}

file_info file_info_of(rpc::FileInfo::Reader r) {
  file_info x;
  x.path = r.getPath().cStr();
  switch (r.getType()) {
  case rpc::FileType::REGULAR:
    x.type = file_type::regular;
    break;
  case rpc::FileType::DIRECTORY:
    x.type = file_type::directory;
    break;
  case rpc::FileType::SYMLINK:
    x.type = file_type::symlink;
    break;
  default:
    x.type = file_type::other;
  }
  x.size = r.getSize();
  x.mode = r.getMode();
  x.mtime_ns = r.getMtimeNs();
  return x;
}

std::string bytes_of(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

sandbox_info info_of(rpc::SandboxInfo::Reader r) {
  sandbox_info i;
  i.id = r.getId().cStr();
  i.state = std::string(name_of(r.getState()));
  i.template_name = r.getTemplate().cStr();
  i.runtime = r.getRuntime().cStr();
  i.limits = limits_of(r.getLimits());
  i.labels = labels_of(r.getLabels());
  i.created_at_ns = r.getCreatedAtNs();
  i.end_time_ns = r.getEndTimeNs();
  i.pause_mode = r.getPauseMode() == schema::PauseMode::MEMORY ? events::pause_mode::memory
                                                               : events::pause_mode::filesystem;
  i.idle_timeout_ns = r.getIdleTimeoutNs();
  i.lifetime_ns = r.getLifetimeNs();
  i.paused_retention_ns = r.getPausedRetentionNs();
  i.on_timeout = r.getOnTimeout().cStr();
  i.writable_bytes = r.getWritableBytes();
  i.failure = r.getFailure().cStr();
  i.sequence = r.getSequence();
  i.tenant = r.getTenant().cStr();
  return i;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sink of a watch or tail: hands each event to the callback on the client's thread
// until it says stop or the stream ends. The callback is cleared before the call returns,
// so an event that arrives later is dropped.
// An event as the RPC carries it, through the codec (which reads every version's events).
events::decoded decode_event(schema::Event::Reader event) {
  capnp::MallocMessageBuilder mb;
  mb.setRoot(event);
  auto words = capnp::messageToFlatArray(mb);
  auto bytes = words.asBytes();
  return events::decode(bytes.begin(), bytes.size());
}

struct stream_state {
  const event_callback* callback = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> done;
  std::string reason;
  bool finished = false;

  void finish(std::string reason) {
    if (finished)
      return;
    finished = true;
    callback = nullptr;
    this->reason = std::move(reason);
    done->fulfill();
  }
};

class event_sink final : public rpc::EventSink::Server {
public:
  explicit event_sink(std::shared_ptr<stream_state> s) : s_(std::move(s)) {}

  kj::Promise<void> event(EventContext context) override {
    if (!s_->callback)
      return kj::READY_NOW;
    auto p = context.getParams();
    auto d = decode_event(p.getEvent());
    if (!d.ok())
      return kj::READY_NOW; // not an event this build can read
    streamed_event e{std::move(d.get()), p.getPartition(), p.getOffset()};
    if (!(*s_->callback)(e))
      s_->finish("stopped");
    return kj::READY_NOW;
  }

  kj::Promise<void> end(EndContext context) override {
    s_->finish(context.getParams().getReason().cStr());
    return kj::READY_NOW;
  }

private:
  std::shared_ptr<stream_state> s_;
};

// An exec's output, handed to the callback on the client's thread as it arrives. The
// callback is cleared once the call returns.
class output_sink final : public rpc::OutputSink::Server {
public:
  explicit output_sink(std::shared_ptr<const output_callback*> on) : on_(std::move(on)) {}

  kj::Promise<void> write(WriteContext context) override {
    auto p = context.getParams();
    auto data = p.getData();
    if (*on_ && **on_)
      (**on_)(p.getStream() == rpc::OutputStream::STDERR ? output_stream::err : output_stream::out,
              std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
    return kj::READY_NOW;
  }
  kj::Promise<void> done(DoneContext) override { return kj::READY_NOW; }

private:
  std::shared_ptr<const output_callback*> on_;
};

// A file's content, handed to the callback on the client's thread as it arrives.
class byte_sink final : public rpc::ByteSink::Server {
public:
  explicit byte_sink(std::shared_ptr<const chunk_callback*> on) : on_(std::move(on)) {}

  kj::Promise<void> write(WriteContext context) override {
    auto data = context.getParams().getData();
    if (*on_ && **on_)
      (**on_)(std::string_view(reinterpret_cast<const char*>(data.begin()), data.size()));
    return kj::READY_NOW;
  }
  kj::Promise<void> done(DoneContext) override { return kj::READY_NOW; }

private:
  std::shared_ptr<const chunk_callback*> on_;
};

// A template build's progress, handed to the callback on the client's thread as it arrives.
class progress_sink final : public rpc::TemplateProgress::Server {
public:
  explicit progress_sink(std::shared_ptr<const client::progress_callback*> on)
      : on_(std::move(on)) {}

  kj::Promise<void> progress(ProgressContext context) override {
    auto p = context.getParams();
    if (*on_ && **on_)
      (**on_)(p.getPhase().cStr(), p.getFraction(), p.getOutput().cStr());
    return kj::READY_NOW;
  }

private:
  std::shared_ptr<const client::progress_callback*> on_;
};

std::string hex_of(capnp::Data::Reader d) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (auto b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

template_info template_of(rpc::TemplateInfo::Reader t) {
  template_info x;
  x.id = t.getId().cStr();
  x.name = t.getName().cStr();
  x.scope = t.getScope() == schema::TemplateScope::TENANT ? "tenant" : "global";
  x.tenant = t.getTenant().cStr();
  x.status = t.getStatus().cStr();
  x.source = t.getSource() == schema::TemplateSource::IMPORT ? "import"
             : t.getSource() == schema::TemplateSource::SPEC ? "spec"
                                                             : "stock";
  x.description = t.getDescription().cStr();
  x.digest = hex_of(t.getDigest());
  for (auto l : t.getLayers())
    x.layers.push_back({hex_of(l.getSha256()), l.getBytes()});
  for (auto e : t.getEnv()) {
    events::env_var v;
    v.name = e.getName().cStr();
    v.value = e.getValue().cStr();
    v.secret = e.getSecret();
    x.env.push_back(std::move(v));
  }
  x.working_directory = t.getWorkingDirectory().cStr();
  x.user = t.getUser().cStr();
  for (auto c : t.getCommand())
    x.command.emplace_back(c.cStr());
  x.total_bytes = t.getTotalBytes();
  x.failure = t.getFailure().cStr();
  x.created_at_ns = t.getCreatedAtNs();
  x.settled_at_ns = t.getSettledAtNs();
  for (auto u : t.getUsedBy())
    x.used_by.emplace_back(u.cStr());
  return x;
}

// Writes what `next` gives to `upload` and commits it: the template it answers.
template_info upload_template(rpc::TemplateUpload::Client upload, const chunk_source& next,
                              const std::string& unreadable, kj::WaitScope& ws,
                              const std::function<void()>& drain) {
  std::string chunk;
  for (;;) {
    const auto step = next(chunk);
    if (step == source_step::failed)
      throw_error(errc::invalid_argument, unreadable);
    if (step == source_step::end)
      break;
    if (chunk.empty())
      continue;
    auto w = upload.writeRequest();
    w.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(chunk.data()), chunk.size()));
    w.send().wait(ws);
  }
  auto answer = upload.commitRequest().send().wait(ws);
  drain();
  return template_of(answer.getTemplate());
}

} // namespace

// The thread's kj event loop, shared by every client of the thread (kj allows one loop per
// thread); it goes when the thread's last client does.
struct thread_io {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  static std::shared_ptr<thread_io> get() {
    thread_local std::weak_ptr<thread_io> current;
    auto io = current.lock();
    if (!io) {
      io = std::make_shared<thread_io>();
      current = io;
    }
    return io;
  }
};

struct client::impl {
  std::shared_ptr<thread_io> loop = thread_io::get(); // first: outlives the rest
  kj::AsyncIoContext& io = loop->io;
  kj::Own<kj::TlsContext> tls;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyVatNetwork> network;
  kj::Own<capnp::RpcSystem<capnp::rpc::twoparty::VatId>> rpc;
  kj::ForkedPromise<void> disconnected = nullptr;
  rpc::Gateway::Client gateway = nullptr;
  rpc::Session::Client session = nullptr;
  kj::Maybe<rpc::Admin::Client> admin;
  identity who;

  client_options options;
  address where;
  // Set when the connection is lost (the daemon went away, or closed it on a request it
  // would not read): the next call dials again and authenticates with the same token.
  bool lost = false;
  kj::Promise<void> watch_lost = nullptr;

  // The size of the request the call in progress sends (0: small, not measured).
  std::size_t sending_bytes = 0;

  kj::WaitScope& ws() { return io.waitScope; }

  // A request larger than the daemon reads is refused here with an error that says so: the
  // daemon would close the connection on it, failing every call in flight.
  template <class Request>
  void check_request_size(const Request& req) {
    const std::size_t bytes = req.totalSize().wordCount * sizeof(capnp::word);
    sending_bytes = bytes;
    if (bytes + k_envelope_bytes <= options.max_message_bytes)
      return;
    throw_error(errc::invalid_argument, "request too large: " + std::to_string(bytes) +
                                          " bytes, and sandboxd reads at most " +
                                          std::to_string(options.max_message_bytes) +
                                          " bytes in one request; " + k_large_content_advice);
  }

  // (Re)connects and authenticates; throws kj::Exception on failure.
  void dial() {
    admin = nullptr;
    session = nullptr;
    gateway = nullptr;
    watch_lost = nullptr;
    disconnected = nullptr;
    rpc = nullptr;
    network = nullptr;
    stream = nullptr;
    tls = nullptr;
    lost = true; // until authenticated
    who = {};
    auto addr = io.provider->getNetwork().parseAddress(where.kj_form()).wait(ws());
    stream = addr->connect().wait(ws());
    if (where.type == address::kind::tcp && (options.tls || !where.loopback())) {
      kj::TlsContext::Options o;
      std::vector<kj::TlsCertificate> trusted;
      if (!options.tls_trusted_file.empty()) {
        trusted.emplace_back(read_text(options.tls_trusted_file).c_str());
        o.useSystemTrustStore = false;
        o.trustedCertificates = kj::arrayPtr(trusted.data(), trusted.size());
      }
      tls = kj::heap<kj::TlsContext>(kj::mv(o));
      const auto name = options.tls_server_name.empty() ? where.host : options.tls_server_name;
      stream = tls->wrapClient(kj::mv(stream), name).wait(ws());
    }
    stream = kj::heap<buffered_stream>(kj::mv(stream));
    capnp::ReaderOptions ro;
    ro.traversalLimitInWords = options.max_message_bytes / sizeof(capnp::word);
    network = kj::heap<capnp::TwoPartyVatNetwork>(*stream, capnp::rpc::twoparty::Side::CLIENT, ro);
    rpc = kj::heap(capnp::makeRpcClient(*network));
    disconnected = network->onDisconnect().fork();
    capnp::word scratch[4]{};
    capnp::MallocMessageBuilder vat(scratch);
    auto server_id = vat.getRoot<capnp::rpc::twoparty::VatId>();
    server_id.setSide(capnp::rpc::twoparty::Side::SERVER);
    gateway = rpc->bootstrap(server_id).castAs<rpc::Gateway>();
    auto req = gateway.authenticateRequest();
    req.setToken(options.token);
    auto resp = req.send().wait(ws());
    session = resp.getSession();
    auto id = resp.getIdentity();
    who.tenant = id.getTenant().cStr();
    who.principal = id.getPrincipal().cStr();
    for (auto s : id.getScopes())
      who.scopes.emplace_back(s.cStr());
    watch_lost = disconnected.addBranch().then([this] { lost = true; }).eagerlyEvaluate(nullptr);
    lost = false;
  }

  // Runs `f` (a call) on a live connection: a lost one is dialled again first, so a client
  // outlives a daemon restart or a dropped connection; only a call in flight when the
  // connection went fails (unavailable).
  template <class T, class F>
  result<T> call(F&& f) {
    ws().poll(); // a loss while the client was idle is noticed now
    if (lost) {
      auto r = guarded<void>([&] { dial(); });
      if (!r)
        return r.err();
    }
    sending_bytes = 0;
    auto r = guarded<T>(std::forward<F>(f));
    ws().poll();
    if (!r && lost && sending_bytes + k_envelope_bytes > k_daemon_message_bytes)
      // The connection went while a request over the daemon's limit was sent: that is why.
      return make_error(errc::invalid_argument,
                        "request too large: " + std::to_string(sending_bytes) +
                          " bytes; sandboxd closed the connection on it (it reads at most " +
                          std::to_string(k_daemon_message_bytes) +
                          " bytes in one request unless configured otherwise); " +
                          k_large_content_advice + ". The client connects again for its next call");
    return r;
  }

  // Lets calls that arrived before a call's answer (output and content chunks sent ahead
  // of it) run before the answer is handed back.
  void drain() {
    kj::evalLast([] {}).wait(ws());
  }

  rpc::Sandbox::Client open(const std::string& id) {
    auto req = session.openRequest();
    req.setSandboxId(whole(id));
    return req.send().getSandbox(); // pipelined: no round trip of its own
  }

  rpc::Admin::Client admin_cap() {
    KJ_IF_MAYBE (a, admin)
      return *a;
    auto a = session.adminRequest().send().getAdmin();
    admin = a;
    return a;
  }

  // Waits for the stream's end: the callback's stop, the server's end, or a lost connection.
  std::string run_stream(stream_state& s, kj::Promise<void> done, rpc::Handle::Client handle) {
    auto lost = disconnected.addBranch().then([]() {
      kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "the connection to sandboxd was lost"));
    });
    done.exclusiveJoin(kj::mv(lost)).wait(ws());
    (void)handle; // dropped here: the server ends the stream
    return s.reason;
  }
};

client::client(std::unique_ptr<impl> m) : impl_(std::move(m)) {}
client::~client() = default;
client::client(client&&) noexcept = default;
client& client::operator=(client&&) noexcept = default;

result<client> client::connect(const client_options& options) {
  auto where = parse_address(options.address);
  if (!where)
    return where.err();
  auto m = std::make_unique<impl>();
  m->options = options;
  m->where = *where;
  auto r = guarded<void>([&] { m->dial(); });
  if (!r)
    return r.err();
  return client(std::move(m));
}

const identity& client::who() const {
  return impl_->who;
}

result<std::string> client::version() {
  return impl_->call<std::string>([&] {
    auto r = impl_->gateway.versionRequest().send().wait(impl_->ws());
    return std::string(r.getVersion().cStr());
  });
}

result<sandbox_info> client::create(const create_options& o) {
  return impl_->call<sandbox_info>([&] {
    auto req = impl_->session.createRequest();
    auto r = req.initRequest();
    r.setTemplate(whole(o.template_name));
    r.setRuntime(whole(o.runtime));
    set_limits(r.initLimits(), o.limits);
    set_labels(r.initLabels(static_cast<unsigned>(o.labels.size())), o.labels);
    api::set_timeouts(r.initTimeouts(), o.timeouts);
    r.setClientRequestId(whole(o.client_request_id));
    set_env(r.initEnv(static_cast<unsigned>(o.env.size())), o.env);
    r.setNoPool(o.no_pool);
    r.setFromSnapshot(whole(o.from_snapshot));
    auto net = r.initNetwork();
    net.setMode(static_cast<schema::NetworkPolicy::Mode>(o.network.mode));
    auto hosts = net.initAllowedHosts(static_cast<unsigned>(o.network.allowed_hosts.size()));
    for (unsigned i = 0; i < o.network.allowed_hosts.size(); ++i)
      hosts.set(i, whole(o.network.allowed_hosts[i]));
    impl_->check_request_size(req);
    auto reply = req.send().wait(impl_->ws());
    auto info = info_of(reply.getInfo());
    info.from_pool = reply.getFromPool();
    return info;
  });
}

result<sandbox_info> client::get(const std::string& sandbox_id) {
  return impl_->call<sandbox_info>([&] {
    auto req = impl_->session.getRequest();
    req.setSandboxId(whole(sandbox_id));
    return info_of(req.send().wait(impl_->ws()).getInfo());
  });
}

result<list_page> client::list(const list_filter& f) {
  return impl_->call<list_page>([&] {
    auto req = impl_->session.listRequest();
    auto filter = req.initFilter();
    auto states = filter.initStates(static_cast<unsigned>(f.states.size()));
    for (unsigned i = 0; i < f.states.size(); ++i) {
      auto s = state_of(f.states[i]);
      if (!s)
        throw_error(errc::invalid_argument, "'" + f.states[i] +
                                              "' is not a sandbox state; use creating, running, "
                                              "pausing, paused, resuming, deleting, deleted or "
                                              "failed");
      states.set(i, *s);
    }
    set_labels(filter.initLabels(static_cast<unsigned>(f.labels.size())), f.labels);
    filter.setIncludeDeleted(f.include_deleted);
    req.setPageToken(whole(f.page_token));
    req.setLimit(f.limit);
    auto resp = req.send().wait(impl_->ws());
    list_page page;
    for (auto s : resp.getSandboxes()) {
      sandbox_summary x;
      x.id = s.getId().cStr();
      x.state = std::string(name_of(s.getState()));
      x.template_name = s.getTemplate().cStr();
      x.limits = limits_of(s.getLimits());
      x.labels = labels_of(s.getLabels());
      const bool held = s.getState() == rpc::SandboxState::PAUSING ||
                        s.getState() == rpc::SandboxState::PAUSED ||
                        s.getState() == rpc::SandboxState::RESUMING;
      x.pause_mode = !held                                           ? ""
                     : s.getPauseMode() == schema::PauseMode::MEMORY ? "memory"
                                                                     : "filesystem";
      x.writable_bytes = s.getWritableBytes();
      x.created_at_ns = s.getCreatedAtNs();
      x.updated_at_ns = s.getUpdatedAtNs();
      x.sequence = s.getSequence();
      page.rows.push_back(std::move(x));
    }
    page.next_page_token = resp.getNextPageToken().cStr();
    return page;
  });
}

result<sandbox_info> client::pause(const std::string& sandbox_id, events::pause_mode mode) {
  return impl_->call<sandbox_info>([&] {
    auto req = impl_->open(sandbox_id).pauseRequest();
    req.setMode(mode == events::pause_mode::memory ? schema::PauseMode::MEMORY
                                                   : schema::PauseMode::FILESYSTEM);
    return info_of(req.send().wait(impl_->ws()).getInfo());
  });
}

result<sandbox_info> client::resume(const std::string& sandbox_id) {
  return impl_->call<sandbox_info>([&] {
    return info_of(impl_->open(sandbox_id).resumeRequest().send().wait(impl_->ws()).getInfo());
  });
}

result<void> client::remove(const std::string& sandbox_id) {
  return impl_->call<void>(
    [&] { impl_->open(sandbox_id).deleteRequest().send().wait(impl_->ws()); });
}

result<void> client::redact(const std::string& sandbox_id, const std::string& reason) {
  return impl_->call<void>([&] {
    auto req = impl_->session.redactRequest();
    req.setSandboxId(whole(sandbox_id));
    req.setReason(whole(reason));
    req.send().wait(impl_->ws());
  });
}

namespace {
snapshot_info snapshot_of(rpc::SnapshotInfo::Reader s) {
  snapshot_info o;
  o.id = s.getId().cStr();
  o.name = s.getName().cStr();
  o.sandbox_id = s.getSandboxId().cStr();
  o.taken_at_ns = s.getTakenAtNs();
  o.template_name = s.getTemplate().cStr();
  o.runtime = s.getRuntime().cStr();
  o.layer_bytes = s.getLayerBytes();
  o.referenced_bytes = s.getReferencedBytes();
  o.exclusive_bytes = s.getExclusiveBytes();
  o.sequence = s.getSequence();
  return o;
}
} // namespace

result<snapshot_info> client::snapshot(const std::string& sandbox_id, const std::string& name) {
  return impl_->call<snapshot_info>([&] {
    auto req = impl_->open(sandbox_id).snapshotRequest();
    req.setName(whole(name));
    return snapshot_of(req.send().wait(impl_->ws()).getSnapshot());
  });
}

result<std::vector<snapshot_info>> client::list_snapshots(const std::string& sandbox_id) {
  return impl_->call<std::vector<snapshot_info>>([&] {
    auto req = impl_->session.listSnapshotsRequest();
    req.setSandboxId(whole(sandbox_id));
    auto response = req.send().wait(impl_->ws()); // owns what the readers below read
    std::vector<snapshot_info> out;
    for (auto s : response.getSnapshots())
      out.push_back(snapshot_of(s));
    return out;
  });
}

result<snapshot_info> client::get_snapshot(const std::string& snapshot_id) {
  return impl_->call<snapshot_info>([&] {
    auto req = impl_->session.getSnapshotRequest();
    req.setSnapshotId(whole(snapshot_id));
    return snapshot_of(req.send().wait(impl_->ws()).getSnapshot());
  });
}

result<void> client::delete_snapshot(const std::string& snapshot_id) {
  return impl_->call<void>([&] {
    auto req = impl_->session.deleteSnapshotRequest();
    req.setSnapshotId(whole(snapshot_id));
    req.send().wait(impl_->ws());
  });
}

result<sandbox_info> client::fork(const std::string& sandbox_id, create_options options) {
  auto s = snapshot(sandbox_id, "fork of " + sandbox_id);
  if (!s)
    return s.err();
  options.from_snapshot = s->id;
  return create(options);
}

result<std::vector<template_info>> client::list_templates() {
  return impl_->call<std::vector<template_info>>([&] {
    auto t = impl_->session.templatesRequest().send().getTemplates();
    auto r = t.listRequest().send().wait(impl_->ws());
    std::vector<template_info> out;
    for (auto x : r.getTemplates())
      out.push_back(template_of(x));
    return out;
  });
}

result<template_info> client::get_template(const std::string& name) {
  return impl_->call<template_info>([&] {
    auto req = impl_->session.templatesRequest().send().getTemplates().getRequest();
    req.setName(whole(name));
    return template_of(req.send().wait(impl_->ws()).getTemplate());
  });
}

result<template_info> client::build_template(const std::string& name,
                                             const progress_callback& on_progress) {
  auto on = std::make_shared<const progress_callback*>(&on_progress);
  auto r = impl_->call<template_info>([&] {
    auto req = impl_->session.templatesRequest().send().getTemplates().buildRequest();
    req.setName(whole(name));
    if (on_progress)
      req.setProgress(kj::heap<progress_sink>(on));
    auto answer = req.send().wait(impl_->ws());
    impl_->drain();
    return template_of(answer.getTemplate());
  });
  *on = nullptr; // progress that arrives later finds no callback
  return r;
}

result<template_info> client::delete_template(const std::string& name) {
  return impl_->call<template_info>([&] {
    auto req = impl_->session.templatesRequest().send().getTemplates().deleteRequest();
    req.setName(whole(name));
    return template_of(req.send().wait(impl_->ws()).getTemplate());
  });
}

result<template_info> client::import_template(const std::string& name, const std::string& scope,
                                              const std::string& format,
                                              const std::string& description,
                                              const chunk_source& next,
                                              const progress_callback& on_progress) {
  if (scope != "tenant" && scope != "global")
    return make_error(errc::invalid_argument,
                      "template scope '" + scope + "' is neither tenant nor global");
  if (format != "rootfs" && format != "image")
    return make_error(errc::invalid_argument,
                      "archive format '" + format + "' is neither rootfs nor image");
  auto on = std::make_shared<const progress_callback*>(&on_progress);
  auto r = impl_->call<template_info>([&] {
    auto req = impl_->session.templatesRequest().send().getTemplates().importArchiveRequest();
    req.setName(whole(name));
    req.setScope(scope == "global" ? schema::TemplateScope::GLOBAL : schema::TemplateScope::TENANT);
    req.setFormat(format == "image" ? rpc::ArchiveFormat::IMAGE : rpc::ArchiveFormat::ROOTFS);
    req.setDescription(whole(description));
    if (on_progress)
      req.setProgress(kj::heap<progress_sink>(on));
    return upload_template(req.send().getUpload(), next,
                           "the archive for template " + name +
                             " could not be read; nothing was imported",
                           impl_->ws(), [this] { impl_->drain(); });
  });
  *on = nullptr;
  return r;
}

result<template_info> client::build_template_spec(const spec_build& request,
                                                  const chunk_source& context,
                                                  const progress_callback& on_progress) {
  if (request.scope != "tenant" && request.scope != "global")
    return make_error(errc::invalid_argument,
                      "template scope '" + request.scope + "' is neither tenant nor global");
  if (request.format != "toml" && request.format != "dockerfile")
    return make_error(errc::invalid_argument,
                      "spec format '" + request.format + "' is neither toml nor dockerfile");
  auto on = std::make_shared<const progress_callback*>(&on_progress);
  auto r = impl_->call<template_info>([&] {
    auto req = impl_->session.templatesRequest().send().getTemplates().buildSpecRequest();
    req.setName(whole(request.name));
    req.setScope(request.scope == "global" ? schema::TemplateScope::GLOBAL
                                           : schema::TemplateScope::TENANT);
    req.setFormat(request.format == "dockerfile" ? rpc::SpecFormat::DOCKERFILE
                                                 : rpc::SpecFormat::TOML);
    req.setSpec(whole(request.spec));
    req.setDescription(whole(request.description));
    if (on_progress)
      req.setProgress(kj::heap<progress_sink>(on));
    impl_->check_request_size(req);
    return upload_template(req.send().getUpload(), context,
                           "the build context of template " + request.name +
                             " could not be read; nothing was built",
                           impl_->ws(), [this] { impl_->drain(); });
  });
  *on = nullptr;
  return r;
}

result<sandbox_info> client::set_timeouts(const std::string& sandbox_id,
                                          const timeout_change& change) {
  return impl_->call<sandbox_info>([&] {
    auto req = impl_->open(sandbox_id).setTimeoutsRequest();
    api::set_timeouts(req.initTimeouts(), change);
    return info_of(req.send().wait(impl_->ws()).getInfo());
  });
}

result<std::string> client::watch(const std::string& sandbox_id, std::uint64_t from_sequence,
                                  const event_callback& on_event) {
  auto state = std::make_shared<stream_state>();
  state->callback = &on_event;
  auto paf = kj::newPromiseAndFulfiller<void>();
  state->done = kj::mv(paf.fulfiller);
  auto r = impl_->call<std::string>([&] {
    auto req = impl_->open(sandbox_id).watchRequest();
    req.setFromSequence(from_sequence);
    req.setSink(kj::heap<event_sink>(state));
    auto handle = req.send().wait(impl_->ws()).getHandle();
    return impl_->run_stream(*state, kj::mv(paf.promise), kj::mv(handle));
  });
  state->callback = nullptr;
  return r;
}

result<exec_result> client::exec(const std::string& sandbox_id, const exec_options& options,
                                 const output_callback& on_output) {
  auto on = std::make_shared<const output_callback*>(&on_output);
  auto r = impl_->call<exec_result>([&] {
    auto req = impl_->open(sandbox_id).execRequest();
    set_exec_request(req.initRequest(), options);
    impl_->check_request_size(req);
    if (on_output)
      req.setOutput(kj::heap<output_sink>(on));
    auto resp = req.send().wait(impl_->ws());
    impl_->drain();
    return exec_result_of(resp.getResult());
  });
  *on = nullptr;
  return r;
}

result<exec_info> client::start(const std::string& sandbox_id, const exec_options& options) {
  return impl_->call<exec_info>([&] {
    auto req = impl_->open(sandbox_id).startRequest();
    set_exec_request(req.initRequest(), options);
    impl_->check_request_size(req);
    auto exec = req.send().getExec();
    return exec_info_of(exec.infoRequest().send().wait(impl_->ws()).getInfo());
  });
}

result<std::vector<exec_info>> client::execs(const std::string& sandbox_id) {
  return impl_->call<std::vector<exec_info>>([&] {
    auto resp = impl_->open(sandbox_id).execsRequest().send().wait(impl_->ws());
    std::vector<exec_info> out;
    for (auto e : resp.getExecs())
      out.push_back(exec_info_of(e));
    return out;
  });
}

result<exec_result> client::wait_exec(const std::string& sandbox_id, const std::string& exec_id) {
  return impl_->call<exec_result>([&] {
    auto req = impl_->open(sandbox_id).openExecRequest();
    req.setExecId(whole(exec_id));
    auto exec = req.send().getExec();
    return exec_result_of(exec.waitRequest().send().wait(impl_->ws()).getResult());
  });
}

result<void> client::kill_exec(const std::string& sandbox_id, const std::string& exec_id,
                               int signal) {
  return impl_->call<void>([&] {
    auto req = impl_->open(sandbox_id).openExecRequest();
    req.setExecId(whole(exec_id));
    auto kill = req.send().getExec().killRequest();
    kill.setSignal(signal);
    kill.send().wait(impl_->ws());
  });
}

result<file_digest> client::read_file(const std::string& sandbox_id, const std::string& path,
                                      const chunk_callback& on_chunk) {
  auto on = std::make_shared<const chunk_callback*>(&on_chunk);
  auto r = impl_->call<file_digest>([&] {
    auto req = impl_->open(sandbox_id).readFileRequest();
    req.setPath(whole(path));
    req.setSink(kj::heap<byte_sink>(on));
    auto resp = req.send().wait(impl_->ws());
    impl_->drain();
    return file_digest{file_info_of(resp.getInfo()), bytes_of(resp.getSha256())};
  });
  *on = nullptr;
  return r;
}

result<file_digest> client::write_file(const std::string& sandbox_id, const std::string& path,
                                       std::uint32_t mode, const chunk_source& next) {
  return impl_->call<file_digest>([&] {
    auto req = impl_->open(sandbox_id).writeFileRequest();
    req.setPath(whole(path));
    req.setMode(mode);
    auto upload = req.send().getUpload();
    std::string chunk;
    for (;;) {
      const auto step = next(chunk);
      if (step == source_step::failed)
        throw_error(errc::invalid_argument,
                    "the content of " + path + " could not be read; nothing was written");
      if (step == source_step::end)
        break;
      // Sent in pieces of at most the daemon's chunk limit (input_limits::chunk_bytes).
      for (std::size_t at = 0; at < chunk.size(); at += k_upload_chunk_bytes) {
        const auto n = std::min(k_upload_chunk_bytes, chunk.size() - at);
        auto w = upload.writeRequest();
        w.setData(kj::arrayPtr(reinterpret_cast<const kj::byte*>(chunk.data() + at), n));
        // Resolves when the flow-control window has room: at most a window is in flight.
        w.send().wait(impl_->ws());
      }
    }
    auto resp = upload.commitRequest().send().wait(impl_->ws());
    return file_digest{file_info_of(resp.getInfo()), bytes_of(resp.getSha256())};
  });
}

result<dir_listing> client::list_dir(const std::string& sandbox_id, const std::string& path,
                                     std::uint32_t limit) {
  return impl_->call<dir_listing>([&] {
    auto req = impl_->open(sandbox_id).listDirRequest();
    req.setPath(whole(path));
    req.setLimit(limit);
    auto resp = req.send().wait(impl_->ws());
    dir_listing out;
    for (auto e : resp.getEntries())
      out.entries.push_back(dir_entry{e.getName().cStr(), file_info_of(e.getInfo())});
    out.truncated = resp.getTruncated();
    return out;
  });
}

result<file_info> client::stat(const std::string& sandbox_id, const std::string& path) {
  return impl_->call<file_info>([&] {
    auto req = impl_->open(sandbox_id).statRequest();
    req.setPath(whole(path));
    return file_info_of(req.send().wait(impl_->ws()).getInfo());
  });
}

result<void> client::make_dir(const std::string& sandbox_id, const std::string& path,
                              bool parents) {
  return impl_->call<void>([&] {
    auto req = impl_->open(sandbox_id).makeDirRequest();
    req.setPath(whole(path));
    req.setParents(parents);
    req.send().wait(impl_->ws());
  });
}

result<void> client::remove_path(const std::string& sandbox_id, const std::string& path,
                                 bool recursive) {
  return impl_->call<void>([&] {
    auto req = impl_->open(sandbox_id).removeRequest();
    req.setPath(whole(path));
    req.setRecursive(recursive);
    req.send().wait(impl_->ws());
  });
}

result<void> client::rename(const std::string& sandbox_id, const std::string& from,
                            const std::string& to) {
  return impl_->call<void>([&] {
    auto req = impl_->open(sandbox_id).renameRequest();
    req.setFrom(from);
    req.setTo(to);
    req.send().wait(impl_->ws());
  });
}

result<bill_report> client::bill(const std::string& tenant, std::int64_t from_ns,
                                 std::int64_t to_ns, bill_grouping by) {
  return impl_->call<bill_report>([&] {
    auto req = impl_->admin_cap().billRequest();
    req.setTenant(whole(tenant));
    req.setFromNs(from_ns);
    req.setToNs(to_ns);
    req.setBy(by == bill_grouping::hour  ? rpc::BillGrouping::HOUR
              : by == bill_grouping::day ? rpc::BillGrouping::DAY
                                         : rpc::BillGrouping::SANDBOX);
    // The response owns the message the readers point into: it must outlive them.
    auto resp = req.send().wait(impl_->ws());
    auto r = resp.getReport();
    bill_report b;
    for (auto l : r.getLines()) {
      bill_line x;
      x.tenant = l.getTenant().cStr();
      x.sandbox_id = l.getSandboxId().cStr();
      x.from_ns = l.getFromNs();
      x.to_ns = l.getToNs();
      x.compute_gib_seconds = l.getComputeGibSeconds();
      x.storage_gib_seconds = l.getStorageGibSeconds();
      x.compute_micros = l.getComputeMicros();
      x.storage_micros = l.getStorageMicros();
      for (auto e : l.getEvents())
        x.event_ids.emplace_back(e.cStr());
      b.lines.push_back(std::move(x));
    }
    b.total_compute_micros = r.getTotalComputeMicros();
    b.total_storage_micros = r.getTotalStorageMicros();
    b.total_micros = r.getTotalMicros();
    return b;
  });
}

result<audit_page> client::audit(const audit_query& q) {
  return impl_->call<audit_page>([&] {
    auto req = impl_->admin_cap().auditRequest();
    auto query = req.initQuery();
    query.setTenant(whole(q.tenant));
    query.setSandboxId(whole(q.sandbox_id));
    query.setFromNs(q.from_ns);
    query.setToNs(q.to_ns);
    query.setPageToken(whole(q.page_token));
    query.setLimit(q.limit);
    auto resp = req.send().wait(impl_->ws());
    audit_page page;
    for (auto r : resp.getRows()) {
      audit_entry e;
      e.tenant = r.getTenant().cStr();
      e.partition = r.getPartition();
      e.position = r.getPosition();
      e.event_id = r.getEventId().cStr();
      e.sandbox_id = r.getSandboxId().cStr();
      e.occurred_at_ns = r.getOccurredAtNs();
      e.principal = r.getPrincipal().cStr();
      e.action = r.getAction().cStr();
      e.outcome = r.getOutcome().cStr();
      e.detail = r.getDetail().cStr();
      e.redacted = r.getRedacted();
      auto h = r.getHash();
      e.hash.assign(reinterpret_cast<const char*>(h.begin()), h.size());
      page.rows.push_back(std::move(e));
    }
    page.next_page_token = resp.getNextPageToken().cStr();
    return page;
  });
}

result<audit_check> client::audit_verify(const std::string& tenant) {
  return impl_->call<audit_check>([&] {
    auto req = impl_->admin_cap().auditVerifyRequest();
    req.setTenant(whole(tenant));
    auto resp = req.send().wait(impl_->ws());
    audit_check c;
    c.checked_rows = resp.getCheckedRows();
    for (auto p : resp.getProblems())
      c.problems.push_back(audit_problem{p.getTenant().cStr(), p.getPartition(), p.getPosition(),
                                         p.getEventId().cStr(), p.getKind().cStr(),
                                         p.getMessage().cStr()});
    return c;
  });
}

result<std::vector<streamed_event>> client::history(const std::string& sandbox_id) {
  return impl_->call<std::vector<streamed_event>>([&]() -> result<std::vector<streamed_event>> {
    auto req = impl_->admin_cap().historyRequest();
    req.setSandboxId(whole(sandbox_id));
    auto resp = req.send().wait(impl_->ws());
    std::vector<streamed_event> out;
    for (auto e : resp.getEvents()) {
      auto d = decode_event(e.getEvent());
      if (!d.ok())
        return make_error(errc::internal, "the daemon sent " + sandbox_id +
                                            "'s event at partition " +
                                            std::to_string(e.getPartition()) + " offset " +
                                            std::to_string(e.getOffset()) +
                                            " that does not decode: " + d.failure().message);
      out.push_back({std::move(d.get()), e.getPartition(), e.getOffset()});
    }
    return out;
  });
}

result<projection_check> client::verify_projection(const std::string& name) {
  return impl_->call<projection_check>([&] {
    auto req = impl_->admin_cap().verifyProjectionRequest();
    req.setName(whole(name));
    auto resp = req.send().wait(impl_->ws());
    projection_check c;
    c.name = name.empty() ? "read_models" : name;
    c.rows_compared = resp.getRowsCompared();
    for (auto d : resp.getDifferences()) {
      projection_difference out{d.getTable().cStr(), d.getSide().cStr(), d.getRow().cStr(), {}};
      for (auto id : d.getEvents())
        out.events.push_back(id.cStr());
      c.differences.push_back(std::move(out));
    }
    for (auto o : resp.getOffsets())
      c.offsets.emplace_back(o.getPartition(), o.getOffset());
    return c;
  });
}

result<std::vector<projection_partition>> client::projection_status() {
  return impl_->call<std::vector<projection_partition>>([&] {
    auto resp = impl_->admin_cap().projectionStatusRequest().send().wait(impl_->ws());
    std::vector<projection_partition> out;
    for (auto p : resp.getPartitions())
      out.push_back({p.getProjection().cStr(), p.getPartition(), p.getOffset(), p.getEndOffset(),
                     p.getLagEvents(), p.getLagSeconds()});
    return out;
  });
}

result<projection_rebuild> client::rebuild_projection(const std::string& name) {
  return impl_->call<projection_rebuild>([&] {
    auto req = impl_->admin_cap().rebuildProjectionRequest();
    req.setName(whole(name));
    auto resp = req.send().wait(impl_->ws());
    projection_rebuild out;
    out.name = name.empty() ? "read_models" : name;
    out.rows_replaced = resp.getRowsReplaced();
    for (auto o : resp.getOffsets())
      out.offsets.emplace_back(o.getPartition(), o.getOffset());
    return out;
  });
}

result<determinism_check> client::check_determinism(const std::string& sandbox_id) {
  return impl_->call<determinism_check>([&] {
    auto req = impl_->admin_cap().checkDeterminismRequest();
    req.setSandboxId(whole(sandbox_id));
    auto resp = req.send().wait(impl_->ws());
    determinism_check out;
    out.checked = resp.getChecked();
    for (auto d : resp.getDifferences())
      out.differences.push_back(
        {d.getSandboxId().cStr(), d.getField().cStr(), d.getLive().cStr(), d.getReplayed().cStr()});
    return out;
  });
}

result<std::string> client::tail(const std::map<std::int32_t, std::int64_t>& from, bool follow,
                                 const event_callback& on_event) {
  auto state = std::make_shared<stream_state>();
  state->callback = &on_event;
  auto paf = kj::newPromiseAndFulfiller<void>();
  state->done = kj::mv(paf.fulfiller);
  auto r = impl_->call<std::string>([&] {
    auto req = impl_->admin_cap().tailRequest();
    auto list = req.initFrom(static_cast<unsigned>(from.size()));
    unsigned i = 0;
    for (const auto& [p, o] : from) {
      list[i].setPartition(p);
      list[i].setOffset(o);
      ++i;
    }
    req.setFollow(follow);
    req.setSink(kj::heap<event_sink>(state));
    auto handle = req.send().wait(impl_->ws()).getHandle();
    return impl_->run_stream(*state, kj::mv(paf.promise), kj::mv(handle));
  });
  state->callback = nullptr;
  return r;
}

// --- warm pools (Admin.pools) -------------------------------------------------------------

namespace {

void set_pool_key(rpc::PoolKey::Builder k, const pool_options& p) {
  k.setTemplate(whole(p.template_name));
  k.setRuntime(whole(p.runtime));
  set_limits(k.initLimits(), p.limits);
}

} // namespace

result<std::vector<pool_info>> client::pools() {
  return guarded<std::vector<pool_info>>([&] {
    auto pools = impl_->admin_cap().poolsRequest().send().getPools();
    auto resp = pools.listRequest().send().wait(impl_->ws());
    std::vector<pool_info> out;
    for (auto p : resp.getPools()) {
      pool_info i;
      i.key = p.getKey().cStr();
      auto s = p.getSettings();
      i.settings.template_name = s.getKey().getTemplate().cStr();
      i.settings.runtime = s.getKey().getRuntime().cStr();
      i.settings.limits = limits_of(s.getKey().getLimits());
      i.settings.size = s.getSize();
      i.settings.maximum = s.getMaximum();
      i.settings.refill_per_second = s.getRefillPerSecond();
      i.ready = p.getReady();
      i.making = p.getMaking();
      i.target = p.getTarget();
      i.hits = p.getHits();
      i.misses = p.getMisses();
      i.made = p.getMade();
      i.failed = p.getFailed();
      i.retired = p.getRetired();
      i.refill_seconds_mean = p.getRefillSecondsMean();
      i.refill_seconds_max = p.getRefillSecondsMax();
      for (auto id : p.getReadyIds())
        i.ready_ids.emplace_back(id.cStr());
      i.last_error = p.getLastError().cStr();
      out.push_back(std::move(i));
    }
    return out;
  });
}

result<void> client::set_pool(const pool_options& pool) {
  return guarded<void>([&] {
    auto req = impl_->admin_cap().poolsRequest().send().getPools().setRequest();
    auto s = req.initSettings();
    set_pool_key(s.initKey(), pool);
    s.setSize(pool.size);
    s.setMaximum(pool.maximum);
    s.setRefillPerSecond(pool.refill_per_second);
    req.send().wait(impl_->ws());
  });
}

result<bool> client::remove_pool(const pool_options& key) {
  return guarded<bool>([&] {
    auto req = impl_->admin_cap().poolsRequest().send().getPools().removeRequest();
    set_pool_key(req.initKey(), key);
    return req.send().wait(impl_->ws()).getRemoved();
  });
}

} // namespace sandboxd::api
