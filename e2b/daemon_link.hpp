// daemon_link — the endpoint's connections to sandboxd's RPC API (docs/api.md): one per API key
// in use, authenticated with that key, so that each E2B client is one more client of the
// daemon with its own tenant, principal, per-connection limits and audit trail. At most
// `max_sessions` are kept for reuse: one unused for `session_idle` is forgotten, and a new key
// past the most forgets the least recently used (a new key is refused with
// resource_exhausted only while that many are still authenticating). A forgotten connection
// stays open while a request holds it (a command's stream), and closes with the last one.
// Keys are kept only as their SHA-256.
//
// On the endpoint's event-loop thread only.
#pragma once

#include "e2b/e2b_server.hpp"
#include "schemas/api.capnp.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/timer.h>

#include <map>
#include <memory>
#include <string>

namespace sandboxd::e2b {

struct daemon_session {
  // Members in this order: the capabilities go before the connection they live on.
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyClient> rpc;
  rpc::Session::Client session = nullptr;
  std::string tenant;
  std::string principal;
  bool lost = false; // the connection broke: the next request makes a new one

  // The sandbox `id` of this session's tenant, pipelined: a missing one (or another
  // tenant's) fails every call made on it with not_found.
  rpc::Sandbox::Client open(const std::string& id);
};

class daemon_link {
public:
  daemon_link(kj::AsyncIoProvider& io, kj::Timer& timer, std::string address,
              const e2b_limits& limits);
  ~daemon_link();

  // The session of `api_key`. Fails with permission_denied (a key the daemon does not know),
  // resource_exhausted (every connection busy) or unavailable (the daemon cannot be reached).
  kj::Promise<std::shared_ptr<daemon_session>> session_for(const std::string& api_key);

  std::size_t open_sessions() const { return entries_.size(); }

private:
  struct entry {
    kj::ForkedPromise<std::shared_ptr<daemon_session>> ready;
    std::shared_ptr<daemon_session> session; // once ready
    kj::TimePoint last_used;
  };
  kj::Promise<std::shared_ptr<daemon_session>> connect(std::string api_key, std::string hash);
  bool evict_one_idle();
  kj::Promise<void> sweep();

  kj::AsyncIoProvider& io_;
  kj::Timer& timer_;
  std::string address_;
  const e2b_limits& limits_;
  std::map<std::string, entry> entries_; // by the key's SHA-256
  struct error_handler final : kj::TaskSet::ErrorHandler {
    void taskFailed(kj::Exception&&) override {}
  } ignore_;
  kj::TaskSet tasks_{ignore_};
  kj::Promise<void> sweeper_ = nullptr;
};

} // namespace sandboxd::e2b
