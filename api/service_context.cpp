#include "api/service_context.hpp"

#include "api/rpc_error.hpp"

#include <chrono>

namespace sandboxd::api {

stream_wakeups::stream_wakeups(std::int32_t partitions)
    : position_(static_cast<std::size_t>(partitions), 0),
      waiting_(static_cast<std::size_t>(partitions)) {}

kj::Promise<void> stream_wakeups::past(std::int32_t partition, std::int64_t offset) {
  const auto p = static_cast<std::size_t>(partition);
  if (position_[p] > offset)
    return kj::READY_NOW;
  auto paf = kj::newPromiseAndFulfiller<void>();
  waiting_[p].push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

kj::Promise<void> stream_wakeups::any() {
  auto paf = kj::newPromiseAndFulfiller<void>();
  any_.push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

void stream_wakeups::advanced(std::int32_t partition, std::int64_t next_offset) {
  const auto p = static_cast<std::size_t>(partition);
  if (next_offset <= position_[p])
    return;
  position_[p] = next_offset;
  // Every waiter re-checks the log itself; a stream that went away has left a fulfiller
  // nobody waits on, which fulfill() ignores.
  for (auto& f : std::exchange(waiting_[p], {}))
    f->fulfill();
  for (auto& f : std::exchange(any_, {}))
    f->fulfill();
}

kj::Promise<actors::command_reply>
service_context::submit(std::string sandbox_id, actors::command c, actors::reply_when when) {
  auto [promise, done] = bridge->expect<actors::command_reply>();
  plane->submit(std::move(sandbox_id), std::move(c), when, std::move(done));
  return kj::mv(promise);
}

kj::Promise<actors::command_reply> service_context::query(std::string sandbox_id,
                                                          std::string tenant) {
  auto [promise, done] = bridge->expect<actors::command_reply>();
  plane->query(sandbox_id, std::move(tenant), std::move(done));
  return promise.then([id = std::move(sandbox_id)](actors::command_reply r) {
    // A deleted sandbox is gone to its tenant: the answer a missing id gets, word for word.
    if (r.ok() && r.state.status == actors::sandbox_status::deleted)
      r.failure = events::make_error(events::errc::not_found,
                                     "sandbox " + id + " does not exist; check the sandbox id");
    return r;
  });
}

call_slot::call_slot(service_context& ctx, std::shared_ptr<connection_state> conn)
    : ctx_(&ctx), conn_(std::move(conn)) {
  ++conn_->calls_in_flight;
  ++ctx_->calls_in_flight;
}

call_slot::call_slot(call_slot&& other) noexcept
    : ctx_(other.ctx_), conn_(std::move(other.conn_)) {}

call_slot::~call_slot() {
  if (!conn_)
    return;
  --conn_->calls_in_flight;
  --ctx_->calls_in_flight;
}

call_slot enter(service_context& ctx, const std::shared_ptr<connection_state>& conn) {
  if (conn->calls_in_flight >= ctx.options.max_calls_in_flight)
    throw_error(errc::resource_exhausted,
                "this connection has " + std::to_string(conn->calls_in_flight) +
                  " calls in flight, the most it may have; wait for answers before sending more");
  return call_slot(ctx, conn);
}

namespace {

bool is_not_found(const kj::Exception& e) {
  return e.getDescription().startsWith("not_found: ");
}

// `answer`, reported to on_call when it settles.
kj::Promise<void> observed(service_context& ctx, const char* method, kj::Promise<void> answer) {
  if (!ctx.options.on_call)
    return answer;
  const auto t0 = std::chrono::steady_clock::now();
  auto* c = &ctx;
  auto seconds = [t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  return answer.then(
    [c, method, seconds]() -> kj::Promise<void> {
      c->options.on_call(method, "ok", seconds());
      return kj::READY_NOW;
    },
    [c, method, seconds](kj::Exception&& e) -> kj::Promise<void> {
      c->options.on_call(method, to_string(from_exception(e).code), seconds());
      return kj::mv(e);
    });
}

} // namespace

kj::Promise<void> plain_call(service_context& ctx, const std::shared_ptr<connection_state>& conn,
                             const char* method, kj::Function<kj::Promise<void>()> body) {
  auto slot = enter(ctx, conn);
  return observed(ctx, method, kj::evalNow(kj::mv(body))).attach(kj::mv(slot));
}

kj::Promise<void> sandbox_call(service_context& ctx, const std::shared_ptr<connection_state>& conn,
                               const char* method, kj::Function<kj::Promise<void>()> body) {
  auto slot = enter(ctx, conn);
  const auto deadline = ctx.timer->now() + ctx.options.not_found_floor.count() * kj::MILLISECONDS;
  auto* timer = ctx.timer;
  return observed(ctx, method,
                  kj::evalNow(kj::mv(body))
                    .catch_([timer, deadline](kj::Exception&& e) -> kj::Promise<void> {
                      if (!is_not_found(e))
                        return kj::mv(e);
                      return timer->atTime(deadline).then(
                        [e = kj::mv(e)]() mutable -> kj::Promise<void> { return kj::mv(e); });
                    }))
    .attach(kj::mv(slot));
}

} // namespace sandboxd::api
