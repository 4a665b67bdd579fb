// service_context.hpp — what the RPC services of one server share, and the per-connection
// state. Internal to api/ (the server and its services include it); everything here lives
// on the server's event-loop thread unless a comment says otherwise.
#pragma once

#include "actors/control_plane.hpp"
#include "api/log_follower.hpp"
#include "api/loop_bridge.hpp"
#include "api/read_store.hpp"
#include "api/rpc_error.hpp"
#include "api/server.hpp"
#include "api/snapshot_registry.hpp"
#include "base/worker_pool.hpp"
#include "schemas/api.capnp.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/timer.h>

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace sandboxd::api {

struct connection_state {
  std::uint64_t id = 0;
  std::string peer;           // the TCP peer's address; "" on a unix socket
  bool authenticated = false; // once a token was accepted on it
  std::size_t calls_in_flight = 0;
  std::size_t streams = 0;
  std::size_t uploads = 0;                      // open (uncommitted) uploads
  std::uint64_t upload_bytes = 0;               // what they buffer
  std::set<std::string> tenants;                // connection slots held, released at disconnect
  capnp::TwoPartyVatNetwork* network = nullptr; // null once disconnected
};

// Wakes streams waiting for records past an offset: the follower reports (through the
// bridge) how far it has read each partition.
class stream_wakeups {
public:
  explicit stream_wakeups(std::int32_t partitions);
  // Resolves once the follower has read past `offset` in `partition` (at once if it has).
  kj::Promise<void> past(std::int32_t partition, std::int64_t offset);
  // Resolves at the next advance of any partition.
  kj::Promise<void> any();
  void advanced(std::int32_t partition, std::int64_t next_offset);
  std::int64_t position(std::int32_t partition) const {
    return position_[static_cast<std::size_t>(partition)];
  }

private:
  // Drops the fulfillers of streams that went away (so a client that opens and drops
  // watches on a quiet partition cannot grow the lists), once a list doubled since.
  static void prune(std::vector<kj::Own<kj::PromiseFulfiller<void>>>& list, std::size_t& at);

  std::vector<std::int64_t> position_;
  std::vector<std::size_t> prune_at_;
  std::size_t any_prune_at_ = 64;
  std::vector<std::vector<kj::Own<kj::PromiseFulfiller<void>>>> waiting_;
  std::vector<kj::Own<kj::PromiseFulfiller<void>>> any_;
};

struct stdin_holder; // exec_service.cpp: an exec's streamed stdin, shared by its handles

struct service_context {
  server_options options;
  actors::control_plane* plane = nullptr;
  events::event_log* log = nullptr;
  const authenticator* auth = nullptr;
  kj::Timer* timer = nullptr;
  loop_bridge* bridge = nullptr;
  tenant_ledger* ledger = nullptr;        // thread-safe
  snapshot_registry* snapshots = nullptr; // thread-safe
  log_follower* follower = nullptr;       // thread-safe queries
  read_store* store = nullptr;            // null without PostgreSQL; used on workers
  worker_pool* workers = nullptr;
  // Template work that may block for minutes (a stock template's first build), kept off
  // `workers` so that queries never wait behind it.
  worker_pool* template_workers = nullptr;
  stream_wakeups* wakeups = nullptr;
  std::unordered_map<std::string, std::size_t> connections_by_tenant;
  std::size_t unauthenticated = 0; // connections with no token accepted yet
  // Open uploads and the bytes they buffer, by tenant (upload_budget, file_service.cpp).
  struct upload_totals {
    std::size_t uploads = 0;
    std::uint64_t bytes = 0;
  };
  std::unordered_map<std::string, upload_totals> uploads_by_tenant;
  // The streamed stdin of each exec some handle holds, by tenant, sandbox and exec id:
  // openExec's handle writes to the same stdin as start's.
  std::unordered_map<std::string, std::weak_ptr<stdin_holder>> exec_stdins;
  std::uint64_t next_call = 0;
  std::uint64_t stream_events_sent = 0;
  std::size_t streams = 0;
  std::size_t calls_in_flight = 0;

  const tenant_quota& quota_of(const std::string& tenant) const {
    auto it = options.quotas.find(tenant);
    return it == options.quotas.end() ? options.quota : it->second;
  }
  const network::ceiling& network_ceiling_of(const std::string& tenant) const {
    auto it = options.network_ceilings.find(tenant);
    return it == options.network_ceilings.end() ? options.network_ceiling : it->second;
  }
  // Throws resource_exhausted once `tenant` has used its log budget for the hour
  // (log_budget.hpp). Every call that logs what a tenant sends checks it first; delete and
  // redact do not, so a tenant out of budget can still give resources back.
  void admit_log(const std::string& tenant) const {
    check_result(ledger->admit_log(tenant, quota_of(tenant), std::chrono::system_clock::now()));
  }
  std::string correlation_id(const connection_state& c) {
    return "rpc-" + std::to_string(c.id) + "-" + std::to_string(++next_call);
  }

  // The control plane, as kj promises (the reply crosses from an actor thread by the bridge).
  kj::Promise<actors::command_reply> submit(std::string sandbox_id, actors::command c,
                                            actors::reply_when when);
  kj::Promise<actors::command_reply> query(std::string sandbox_id, std::string tenant);
  // Runs `f` on a worker thread; its value comes back to the loop (held by a shared_ptr:
  // it crosses threads once and is never copied).
  template <class T, class F>
  kj::Promise<std::shared_ptr<T>> on_worker(F f) {
    return on_pool<T>(*workers, std::move(f));
  }
  template <class T, class F>
  kj::Promise<std::shared_ptr<T>> on_pool(worker_pool& pool, F f) {
    auto [promise, done] = bridge->template expect<std::shared_ptr<T>>();
    pool.post(
      [f = std::move(f), done = std::move(done)]() mutable { done(std::make_shared<T>(f())); });
    return kj::mv(promise);
  }
};

// One call's place among its connection's calls in flight: taken by enter(), given back
// when the call's promise completes (attach it). enter() throws resource_exhausted when the
// connection has max_calls_in_flight calls already.
class call_slot {
public:
  call_slot(service_context& ctx, std::shared_ptr<connection_state> conn);
  call_slot(call_slot&& other) noexcept;
  call_slot& operator=(call_slot&&) = delete;
  ~call_slot();

private:
  service_context* ctx_;
  std::shared_ptr<connection_state> conn_;
};
call_slot enter(service_context& ctx, const std::shared_ptr<connection_state>& conn);

// Runs a sandbox call: counts it among the calls in flight, holds a NOT_FOUND answer until
// not_found_floor after the call arrived (server.hpp says why), and reports `method`'s
// outcome and latency to options.on_call.
kj::Promise<void> sandbox_call(service_context& ctx, const std::shared_ptr<connection_state>& conn,
                               const char* method, kj::Function<kj::Promise<void>()> body);
// The same without the NOT_FOUND floor (calls that name no sandbox).
kj::Promise<void> plain_call(service_context& ctx, const std::shared_ptr<connection_state>& conn,
                             const char* method, kj::Function<kj::Promise<void>()> body);

// The error of a failed reply, or nothing.
inline void check(const actors::command_reply& r) {
  if (r.failure)
    throw_error(*r.failure);
}
template <class T>
T take(result<T>&& r) {
  if (!r)
    throw_error(r.err());
  return std::move(r).value();
}

// The capabilities.
rpc::Gateway::Client make_gateway(std::shared_ptr<service_context> ctx,
                                  std::shared_ptr<connection_state> conn);
rpc::Session::Client make_session(std::shared_ptr<service_context> ctx,
                                  std::shared_ptr<connection_state> conn, identity who);
rpc::Sandbox::Client make_sandbox(std::shared_ptr<service_context> ctx,
                                  std::shared_ptr<connection_state> conn, identity who,
                                  std::string sandbox_id);
rpc::Admin::Client make_admin(std::shared_ptr<service_context> ctx,
                              std::shared_ptr<connection_state> conn, identity who);
rpc::Templates::Client make_templates(std::shared_ptr<service_context> ctx,
                                      std::shared_ptr<connection_state> conn, identity who);
rpc::Pools::Client make_pools(std::shared_ptr<service_context> ctx,
                              std::shared_ptr<connection_state> conn); // pool_service.cpp

// Streams (event_stream.cpp). A watch of one sandbox from a sequence number; a tail of the
// whole log from offsets. The Handle's last reference going away ends the stream.
rpc::Handle::Client start_watch(std::shared_ptr<service_context> ctx,
                                std::shared_ptr<connection_state> conn, std::string sandbox_id,
                                std::uint64_t from_sequence, rpc::EventSink::Client sink);
rpc::Handle::Client start_tail(std::shared_ptr<service_context> ctx,
                               std::shared_ptr<connection_state> conn,
                               std::map<std::int32_t, std::int64_t> from, bool follow,
                               rpc::EventSink::Client sink);

} // namespace sandboxd::api
