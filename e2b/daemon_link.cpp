#include "e2b/daemon_link.hpp"

#include "api/address.hpp"
#include "api/rpc_error.hpp"
#include "base/sha256.hpp"

namespace sandboxd::e2b {

namespace {

std::string hex(const sha256_digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (auto b : d) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

kj::Duration to_kj(std::chrono::milliseconds ms) {
  return ms.count() * kj::MILLISECONDS;
}

} // namespace

rpc::Sandbox::Client daemon_session::open(const std::string& id) {
  auto req = session.openRequest();
  req.setSandboxId(id);
  return req.send().getSandbox();
}

daemon_link::daemon_link(kj::AsyncIoProvider& io, kj::Timer& timer, std::string address,
                         const e2b_limits& limits)
    : io_(io), timer_(timer), address_(std::move(address)), limits_(limits) {
  sweeper_ = sweep().eagerlyEvaluate(nullptr);
}

daemon_link::~daemon_link() = default;

kj::Promise<void> daemon_link::sweep() {
  // Every few seconds: forget the connections not used for session_idle, and the broken ones.
  // A request that still holds one keeps it open until it is done.
  return timer_.afterDelay(5 * kj::SECONDS).then([this] {
    const auto now = timer_.now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      const auto& s = it->second.session;
      if (s && (s->lost || now - it->second.last_used >= to_kj(limits_.session_idle)))
        it = entries_.erase(it);
      else
        ++it;
    }
    return sweep();
  });
}

bool daemon_link::evict_one_idle() {
  // The least recently used connection that is made (one still authenticating is left).
  auto victim = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->second.session &&
        (victim == entries_.end() || it->second.last_used < victim->second.last_used))
      victim = it;
  if (victim == entries_.end())
    return false;
  entries_.erase(victim);
  return true;
}

kj::Promise<std::shared_ptr<daemon_session>> daemon_link::session_for(const std::string& api_key) {
  auto hash = hex(sha256_of(api_key));
  auto it = entries_.find(hash);
  if (it != entries_.end() && it->second.session && it->second.session->lost) {
    entries_.erase(it);
    it = entries_.end();
  }
  if (it == entries_.end()) {
    if (entries_.size() >= limits_.max_sessions && !evict_one_idle())
      api::throw_error(errc::resource_exhausted,
                       "the E2B endpoint is authenticating " + std::to_string(entries_.size()) +
                         " API keys at once, the most it does; retry later");
    auto ready = connect(api_key, hash).fork();
    it = entries_.emplace(hash, entry{kj::mv(ready), nullptr, timer_.now()}).first;
  }
  it->second.last_used = timer_.now();
  return it->second.ready.addBranch();
}

kj::Promise<std::shared_ptr<daemon_session>> daemon_link::connect(std::string api_key,
                                                                  std::string hash) {
  auto where = api::parse_address(address_);
  if (!where)
    api::throw_error(errc::unavailable, "the daemon's address " + address_ + " cannot be read");
  return io_.getNetwork()
    .parseAddress(where->kj_form())
    .then([](kj::Own<kj::NetworkAddress> a) { return a->connect().attach(kj::mv(a)); })
    .then([this, api_key = kj::mv(api_key), hash](kj::Own<kj::AsyncIoStream> stream) mutable {
      auto s = std::make_shared<daemon_session>();
      s->stream = kj::mv(stream);
      s->rpc = kj::heap<capnp::TwoPartyClient>(*s->stream);
      std::weak_ptr<daemon_session> weak = s;
      tasks_.add(s->rpc->onDisconnect().then([weak] {
        if (auto live = weak.lock())
          live->lost = true;
      }));
      auto gateway = s->rpc->bootstrap().castAs<rpc::Gateway>();
      auto req = gateway.authenticateRequest();
      req.setToken(api_key);
      return req.send().then(
        [this, s, hash](capnp::Response<rpc::Gateway::AuthenticateResults> r) mutable {
          s->session = r.getSession();
          s->tenant = r.getIdentity().getTenant().cStr();
          s->principal = r.getIdentity().getPrincipal().cStr();
          auto it = entries_.find(hash);
          if (it != entries_.end())
            it->second.session = s;
          return s;
        });
    })
    .catch_([this, hash](kj::Exception&& e) -> std::shared_ptr<daemon_session> {
      // A failed key is not kept: the next request tries again.
      auto it = entries_.find(hash);
      if (it != entries_.end() && !it->second.session)
        tasks_.add(kj::evalLater([this, hash] {
          auto again = entries_.find(hash);
          if (again != entries_.end() && !again->second.session)
            entries_.erase(again);
        }));
      kj::throwFatalException(kj::mv(e));
    });
}

} // namespace sandboxd::e2b
