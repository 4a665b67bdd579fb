// event_stream — watch (one sandbox's events from a sequence number, then live) and tail
// (the whole log from offsets, optionally following), streamed to a client's EventSink.
//
// A stream pulls: it reads one batch (at most k_batch records of one partition) on a worker
// thread, sends the batch's events one at a time, each send awaiting Cap'n Proto's flow
// control, and only then reads the next batch. When the log has nothing new it waits for the
// log follower to report records past its cursor. So a client that reads slowly or not at
// all holds one batch and one flow-control window of this stream, however far the log runs
// ahead. A watch reads its sandbox's partition from the sandbox's first record (the
// follower's index) and skips other sandboxes' records by key.
#include "api/service_context.hpp"

#include <capnp/serialize.h>

#include <cstring>

namespace sandboxd::api {
namespace {

constexpr std::size_t k_batch = 256;

struct watch_target {
  std::string sandbox_id;
  std::uint64_t from_sequence = 0;
};

class event_stream {
public:
  event_stream(std::shared_ptr<service_context> ctx, rpc::EventSink::Client sink,
               std::map<std::int32_t, std::int64_t> cursors, bool follow,
               std::optional<watch_target> watch)
      : ctx_(std::move(ctx)), sink_(kj::mv(sink)), cursors_(std::move(cursors)), follow_(follow),
        watch_(std::move(watch)) {}

  kj::Promise<void> run() {
    if (follow_)
      return step();
    auto* log = ctx_->log;
    std::vector<std::int32_t> parts;
    for (const auto& [p, _] : cursors_)
      parts.push_back(p);
    return ctx_
      ->on_worker<std::map<std::int32_t, std::int64_t>>([log, parts] {
        std::map<std::int32_t, std::int64_t> ends;
        for (auto p : parts) {
          auto e = log->end_offset(p);
          ends[p] = e.ok() ? e.offset : 0;
        }
        return ends;
      })
      .then([this](std::shared_ptr<std::map<std::int32_t, std::int64_t>> ends) {
        ends_ = std::move(*ends);
        return step();
      });
  }

private:
  using batch_ptr = std::shared_ptr<events::read_result>;

  bool done_with(std::int32_t p) const { return !follow_ && cursors_.at(p) >= ends_.at(p); }

  kj::Promise<void> end(std::string reason) {
    auto req = sink_.endRequest();
    req.setReason(reason);
    return req.send().ignoreResult();
  }

  // One round: the next partition that may have records.
  kj::Promise<void> step() {
    std::optional<std::int32_t> pick;
    for (std::size_t tried = 0; tried < cursors_.size() && !pick; ++tried) {
      auto it = cursors_.upper_bound(last_);
      if (it == cursors_.end())
        it = cursors_.begin();
      last_ = it->first;
      if (!done_with(it->first) && !idle_.count(it->first))
        pick = it->first;
    }
    if (!pick) {
      if (!follow_ && std::all_of(cursors_.begin(), cursors_.end(),
                                  [this](const auto& c) { return done_with(c.first); }))
        return end("caught up");
      // Every partition was read to its end this round: wait for the follower.
      idle_.clear();
      if (cursors_.size() == 1) {
        const auto& [p, at] = *cursors_.begin();
        return ctx_->wakeups->past(p, at).then([this] { return step(); });
      }
      for (const auto& [p, at] : cursors_)
        if (ctx_->wakeups->position(p) > at)
          return kj::evalLater([this] { return step(); });
      return ctx_->wakeups->any().then([this] { return step(); });
    }
    const auto p = *pick;
    auto* log = ctx_->log;
    const auto from = cursors_[p];
    return ctx_
      ->on_worker<events::read_result>([log, p, from] {
        events::read_result r;
        try {
          r = log->read(p, from, k_batch);
        } catch (const std::exception& e) {
          r.failure = events::make_error(events::errc::unavailable, e.what());
        }
        return r;
      })
      .then([this, p](batch_ptr batch) -> kj::Promise<void> {
        if (!batch->ok())
          return end("unavailable: reading partition " + std::to_string(p) +
                     " of the log failed (" + batch->failure->message + "); start again later");
        if (batch->records.empty()) {
          idle_.insert(p);
          return step();
        }
        return send(std::move(batch), 0, p);
      });
  }

  kj::Promise<void> send(batch_ptr batch, std::size_t i, std::int32_t p) {
    for (; i < batch->records.size(); ++i) {
      const auto& rec = batch->records[i];
      cursors_[p] = rec.offset + 1;
      if (!follow_ && rec.offset >= ends_.at(p))
        break;
      if (watch_ && rec.key != watch_->sandbox_id)
        continue;
      auto words = kj::heapArray<capnp::word>((rec.value.size() + 7) / 8);
      std::memset(words.begin(), 0, words.size() * sizeof(capnp::word));
      std::memcpy(words.begin(), rec.value.data(), rec.value.size());
      capnp::FlatArrayMessageReader reader(words);
      auto ev = reader.getRoot<schema::Event>();
      if (watch_ && ev.getSequence() < watch_->from_sequence)
        continue;
      const bool deleted = watch_ && ev.getPayload().isDeleted();
      auto req = sink_.eventRequest();
      req.setEvent(ev);
      req.setPartition(rec.partition);
      req.setOffset(rec.offset);
      ++ctx_->stream_events_sent;
      auto sent = req.send();
      if (deleted)
        return sent.then([this] { return end("deleted"); });
      return sent.then([this, batch = std::move(batch), i, p]() mutable {
        return send(std::move(batch), i + 1, p);
      });
    }
    return step();
  }

  std::shared_ptr<service_context> ctx_;
  rpc::EventSink::Client sink_;
  std::map<std::int32_t, std::int64_t> cursors_;
  std::map<std::int32_t, std::int64_t> ends_;
  bool follow_;
  std::optional<watch_target> watch_;
  std::int32_t last_ = -1;
  std::set<std::int32_t> idle_; // read to their end in this round
};

class stream_handle final : public rpc::Handle::Server {
public:
  stream_handle(std::shared_ptr<service_context> ctx, std::shared_ptr<connection_state> conn,
                kj::Own<event_stream> stream)
      : ctx_(std::move(ctx)), conn_(std::move(conn)), stream_(kj::mv(stream)) {
    ++conn_->streams;
    ++ctx_->streams;
    // A failure (the client went away, the sink threw) ends the stream quietly.
    task_ = stream_->run().eagerlyEvaluate([](kj::Exception&&) {});
  }
  ~stream_handle() noexcept(false) {
    task_ = nullptr; // cancel before the stream goes
    --conn_->streams;
    --ctx_->streams;
  }

private:
  std::shared_ptr<service_context> ctx_;
  std::shared_ptr<connection_state> conn_;
  kj::Own<event_stream> stream_;
  kj::Promise<void> task_ = nullptr;
};

void check_stream_room(service_context& ctx, const connection_state& conn) {
  if (conn.streams >= ctx.options.max_streams_per_connection)
    throw_error(errc::resource_exhausted,
                "this connection has " + std::to_string(conn.streams) +
                  " streams open, the most it may have; drop a watch or tail handle first");
}

} // namespace

rpc::Handle::Client start_watch(std::shared_ptr<service_context> ctx,
                                std::shared_ptr<connection_state> conn, std::string sandbox_id,
                                std::uint64_t from_sequence, rpc::EventSink::Client sink) {
  check_stream_room(*ctx, *conn);
  const auto p = ctx->log->partition_for(sandbox_id);
  const auto start = ctx->follower->first_offset(sandbox_id).value_or(ctx->follower->position(p));
  auto stream =
    kj::heap<event_stream>(ctx, kj::mv(sink), std::map<std::int32_t, std::int64_t>{{p, start}},
                           true, watch_target{std::move(sandbox_id), from_sequence});
  return kj::heap<stream_handle>(ctx, std::move(conn), kj::mv(stream));
}

rpc::Handle::Client start_tail(std::shared_ptr<service_context> ctx,
                               std::shared_ptr<connection_state> conn,
                               std::map<std::int32_t, std::int64_t> from, bool follow,
                               rpc::EventSink::Client sink) {
  check_stream_room(*ctx, *conn);
  for (std::int32_t p = 0; p < ctx->log->partitions(); ++p)
    from.emplace(p, 0);
  auto stream = kj::heap<event_stream>(ctx, kj::mv(sink), std::move(from), follow, std::nullopt);
  return kj::heap<stream_handle>(ctx, std::move(conn), kj::mv(stream));
}

} // namespace sandboxd::api
