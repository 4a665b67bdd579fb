// http_exchange — one HTTP request to the E2B endpoint as its routes see it: the parts of its
// head they use, copied before the body is read (kj-http invalidates the head then); its body,
// read within a size limit and an idle time; and its answer, a whole body or a Connect stream
// of envelopes (connect_stream) whose writes are serial, each bounded in time, with keepalive
// events while nothing else is sent.
#pragma once

#include "e2b/connect_protocol.hpp"
#include "e2b/e2b_server.hpp"

#include <kj/compat/http.h>
#include <kj/timer.h>

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::e2b {

struct header_ids {
  explicit header_ids(kj::HttpHeaderTable::Builder& b);
  kj::HttpHeaderId api_key, authorization, access_token, sandbox_id, timeout_ms, keepalive,
    idempotency_key, content_encoding, next_token, cache_control;
};

class exchange {
public:
  exchange(kj::HttpMethod method, kj::StringPtr url, const kj::HttpHeaders& headers,
           kj::AsyncInputStream& body, kj::HttpService::Response& response,
           const kj::HttpHeaderTable& table, const header_ids& ids, kj::Timer& timer,
           const e2b_limits& limits);

  kj::HttpMethod method;
  std::string path;  // without the query
  std::string query; // raw, after '?'
  std::string api_key, authorization, access_token, sandbox_id, idempotency_key;
  std::string content_type, content_encoding;
  std::optional<std::uint64_t> content_length;
  std::optional<std::int64_t> timeout_ms; // Connect-Timeout-Ms
  std::int64_t keepalive_s = 0;           // Keepalive-Ping-Interval

  // The whole body, at most `limit` bytes (too_large past it, at once when the
  // Content-Length says so), each read within body_idle_timeout (the connection is dropped
  // when the client stalls).
  kj::Promise<std::string> read_body(std::size_t limit);
  // The next piece of the body (at most `max` bytes); "" at its end.
  kj::Promise<std::string> read_some(std::size_t max);

  // A whole answer.
  kj::Promise<void> reply(unsigned status, std::string_view content_type, std::string body,
                          std::vector<std::pair<kj::HttpHeaderId, std::string>> extra = {});
  kj::Promise<void> reply_json(unsigned status, std::string body) {
    return reply(status, "application/json", std::move(body));
  }
  // A stream of bytes of unknown length (a file download): begin it, then write pieces.
  kj::Own<kj::AsyncOutputStream> begin_bytes(std::string_view content_type);
  bool responded() const { return responded_; }

  // The value of query parameter `name`, decoded; nothing when absent.
  std::optional<std::string> param(std::string_view name) const;

  kj::HttpService::Response& response;
  kj::AsyncInputStream& body;
  const kj::HttpHeaderTable& table;
  const header_ids& ids;
  kj::Timer& timer;
  const e2b_limits& limits;

  // Bounds `p` by `limit` (a write, a read): past it, `what` fails with DISCONNECTED.
  template <class T>
  kj::Promise<T> within(kj::Promise<T> p, std::chrono::milliseconds limit, const char* what);

  void mark_responded() { responded_ = true; }

private:
  bool responded_ = false;
};

template <class T>
kj::Promise<T> exchange::within(kj::Promise<T> p, std::chrono::milliseconds limit,
                                const char* what) {
  return p.exclusiveJoin(timer.afterDelay(limit.count() * kj::MILLISECONDS).then([what]() -> T {
    kj::throwFatalException(kj::Exception(
      kj::Exception::Type::DISCONNECTED, __FILE__, __LINE__,
      kj::str(what, " took longer than the endpoint allows; the client is too slow")));
  }));
}

// The answer of a server-streaming (or client-streaming) Connect call: 200 with
// application/connect+json, then envelopes, then the end of the stream. Writes are made one
// after the other; a write the client does not take within write_timeout breaks the stream
// (broken() resolves, and everything sent after is dropped). While `keepalive` is set, a
// keepalive message is sent after that long without another.
class connect_stream {
public:
  explicit connect_stream(exchange& x);
  ~connect_stream(); // messages still queued count as sent (their senders are released)

  // Sends the head, then `first` (a stream's first message). Nothing is sent before.
  void begin(std::string first);
  bool begun() const { return begun_; }
  // One message; resolves once it was written (or at once when the stream is broken).
  // Messages sent before begin() wait for it.
  kj::Promise<void> send(std::string message);
  // The end-of-stream envelope; resolves once written (a stream that never began sends its
  // head first, and only the end).
  kj::Promise<void> finish(std::optional<connect_error> failure);
  // Resolves when a write failed or timed out: the client is gone or does not read.
  kj::Promise<void> broken() { return broken_.addBranch(); }
  bool is_broken() const { return is_broken_; }

  // A keepalive message (`message`) after every `every` without another write, until finish().
  void keep_alive(kj::Duration every, std::string message);

private:
  struct pending {
    std::string bytes;
    kj::Own<kj::PromiseFulfiller<void>> written;
  };
  void open(); // sends the head
  kj::Promise<void> enqueue(std::string bytes);
  kj::Promise<void> pump();
  void start_pump();
  void release_all();
  kj::Promise<void> ticks();

  exchange& x_;
  kj::Own<kj::AsyncOutputStream> out_;
  std::deque<pending> queue_;
  bool pumping_ = false;
  kj::Promise<void> pump_ = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> break_;
  kj::ForkedPromise<void> broken_;
  bool begun_ = false;
  bool is_broken_ = false;
  bool finished_ = false;
  kj::TimePoint last_write_;
  kj::Duration keepalive_every_ = 0 * kj::SECONDS;
  std::string keepalive_message_;
  kj::Promise<void> keepalive_ = nullptr;
};

} // namespace sandboxd::e2b
