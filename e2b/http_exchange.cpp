#include "e2b/http_exchange.hpp"

#include "api/rpc_error.hpp"
#include "e2b/lifecycle_json.hpp"

namespace sandboxd::e2b {

namespace {

std::string copy(const kj::HttpHeaders& h, kj::HttpHeaderId id) {
  KJ_IF_MAYBE (v, h.get(id))
    return std::string(v->cStr());
  return {};
}

kj::StringPtr status_text(unsigned status) {
  switch (status) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 204:
    return "No Content";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 409:
    return "Conflict";
  case 412:
    return "Precondition Failed";
  case 413:
    return "Payload Too Large";
  case 415:
    return "Unsupported Media Type";
  case 429:
    return "Too Many Requests";
  case 499:
    return "Client Closed Request";
  case 501:
    return "Not Implemented";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return status < 500 ? "Client Error" : "Server Error";
  }
}

} // namespace

header_ids::header_ids(kj::HttpHeaderTable::Builder& b)
    : api_key(b.add("X-API-KEY")), authorization(b.add("Authorization")),
      access_token(b.add("X-Access-Token")), sandbox_id(b.add("E2b-Sandbox-Id")),
      timeout_ms(b.add("Connect-Timeout-Ms")), keepalive(b.add("Keepalive-Ping-Interval")),
      idempotency_key(b.add("Idempotency-Key")), content_encoding(b.add("Content-Encoding")),
      next_token(b.add("X-Next-Token")), cache_control(b.add("Cache-Control")) {}

exchange::exchange(kj::HttpMethod m, kj::StringPtr url, const kj::HttpHeaders& headers,
                   kj::AsyncInputStream& b, kj::HttpService::Response& r,
                   const kj::HttpHeaderTable& t, const header_ids& i, kj::Timer& tm,
                   const e2b_limits& l)
    : method(m), response(r), body(b), table(t), ids(i), timer(tm), limits(l) {
  std::string_view u(url.cStr(), url.size());
  const auto q = u.find('?');
  path = std::string(u.substr(0, q));
  if (q != std::string_view::npos)
    query = std::string(u.substr(q + 1));
  api_key = copy(headers, ids.api_key);
  authorization = copy(headers, ids.authorization);
  access_token = copy(headers, ids.access_token);
  sandbox_id = copy(headers, ids.sandbox_id);
  idempotency_key = copy(headers, ids.idempotency_key);
  content_type = copy(headers, kj::HttpHeaderId::CONTENT_TYPE);
  content_encoding = copy(headers, ids.content_encoding);
  KJ_IF_MAYBE (n, body.tryGetLength())
    content_length = *n;
  if (auto t = copy(headers, ids.timeout_ms); !t.empty())
    timeout_ms = parse_timeout_ms(t);
  if (auto k = copy(headers, ids.keepalive); !k.empty())
    if (auto s = parse_timeout_ms(k))
      keepalive_s = *s;
}

kj::Promise<std::string> exchange::read_some(std::size_t max) {
  auto buf = kj::heapArray<kj::byte>(max);
  auto read = body.tryRead(buf.begin(), 1, buf.size());
  return within(kj::mv(read), limits.body_idle_timeout, "reading the request body")
    .then([buf = kj::mv(buf)](std::size_t n) {
      return std::string(reinterpret_cast<const char*>(buf.begin()), n);
    });
}

kj::Promise<std::string> exchange::read_body(std::size_t limit) {
  if (content_length && *content_length > limit)
    api::throw_error(errc::too_large, "the request body has " + std::to_string(*content_length) +
                                        " bytes; this endpoint takes at most " +
                                        std::to_string(limit));
  struct reader {
    static kj::Promise<std::string> more(exchange& x, std::string got, std::size_t limit) {
      const auto want = std::min<std::size_t>(64u << 10, limit + 1 - got.size());
      return x.read_some(want).then([&x, got = kj::mv(got),
                                     limit](std::string piece) mutable -> kj::Promise<std::string> {
        if (piece.empty())
          return kj::mv(got);
        got += piece;
        if (got.size() > limit)
          api::throw_error(errc::too_large, "the request body is longer than the " +
                                              std::to_string(limit) + " bytes this endpoint takes");
        return more(x, kj::mv(got), limit);
      });
    }
  };
  return reader::more(*this, std::string(), limit);
}

kj::Promise<void> exchange::reply(unsigned status, std::string_view type, std::string text,
                                  std::vector<std::pair<kj::HttpHeaderId, std::string>> extra) {
  kj::HttpHeaders h(table);
  if (!type.empty())
    h.set(kj::HttpHeaderId::CONTENT_TYPE, kj::str(std::string(type).c_str()));
  h.set(ids.cache_control, "no-store");
  for (auto& [id, value] : extra)
    h.set(id, kj::str(value));
  responded_ = true;
  auto out = response.send(status, status_text(status), h, static_cast<std::uint64_t>(text.size()));
  if (text.empty())
    return kj::READY_NOW;
  // On the heap: a short string's bytes live inside it and would move with it.
  auto owned = kj::heap<std::string>(std::move(text));
  auto write = out->write(owned->data(), owned->size());
  return within(kj::mv(write), limits.write_timeout, "writing the answer")
    .attach(kj::mv(out), kj::mv(owned));
}

kj::Own<kj::AsyncOutputStream> exchange::begin_bytes(std::string_view type) {
  kj::HttpHeaders h(table);
  h.set(kj::HttpHeaderId::CONTENT_TYPE, kj::str(std::string(type).c_str()));
  h.set(ids.cache_control, "no-store");
  responded_ = true;
  return response.send(200, "OK", h);
}

std::optional<std::string> exchange::param(std::string_view name) const {
  auto pairs = parse_query(query);
  if (!pairs)
    return std::nullopt;
  for (auto& [k, v] : *pairs)
    if (k == name)
      return v;
  return std::nullopt;
}

connect_stream::connect_stream(exchange& x) : x_(x), broken_(nullptr), last_write_(x.timer.now()) {
  auto paf = kj::newPromiseAndFulfiller<void>();
  break_ = kj::mv(paf.fulfiller);
  broken_ = paf.promise.fork();
}

connect_stream::~connect_stream() {
  release_all();
}

void connect_stream::release_all() {
  for (auto& p : queue_)
    p.written->fulfill();
  queue_.clear();
}

void connect_stream::open() {
  kj::HttpHeaders h(x_.table);
  h.set(kj::HttpHeaderId::CONTENT_TYPE, "application/connect+json");
  h.set(x_.ids.cache_control, "no-store");
  x_.mark_responded();
  out_ = x_.response.send(200, "OK", h);
  begun_ = true;
}

void connect_stream::begin(std::string first) {
  open();
  // The first message goes before what was queued while the stream had not begun.
  auto paf = kj::newPromiseAndFulfiller<void>();
  queue_.push_front(pending{envelope(first), kj::mv(paf.fulfiller)});
  start_pump();
}

kj::Promise<void> connect_stream::send(std::string message) {
  if (is_broken_ || finished_)
    return kj::READY_NOW;
  return enqueue(envelope(message));
}

kj::Promise<void> connect_stream::enqueue(std::string bytes) {
  auto paf = kj::newPromiseAndFulfiller<void>();
  queue_.push_back(pending{kj::mv(bytes), kj::mv(paf.fulfiller)});
  if (begun_)
    start_pump();
  return kj::mv(paf.promise);
}

void connect_stream::start_pump() {
  if (!pumping_) {
    pumping_ = true;
    pump_ = pump().eagerlyEvaluate(nullptr);
  }
}

kj::Promise<void> connect_stream::pump() {
  if (queue_.empty() || is_broken_) {
    pumping_ = false;
    return kj::READY_NOW;
  }
  auto& front = queue_.front();
  auto write = out_->write(front.bytes.data(), front.bytes.size());
  return x_.within(kj::mv(write), x_.limits.write_timeout, "a response write")
    .then(
      [this]() {
        last_write_ = x_.timer.now();
        queue_.front().written->fulfill();
        queue_.pop_front();
        return pump();
      },
      [this](kj::Exception&&) {
        is_broken_ = true;
        pumping_ = false;
        release_all();
        break_->fulfill();
      });
}

kj::Promise<void> connect_stream::finish(std::optional<connect_error> failure) {
  keepalive_ = nullptr;
  if (is_broken_ || finished_)
    return kj::READY_NOW;
  if (!begun_) {
    // A stream that fails before its first message is still a stream: 200, then its end.
    open();
    release_all(); // messages for a stream that never began are not sent
  }
  finished_ = true;
  return enqueue(end_of_stream(failure)).then([this] {
    // The body ends when the stream is dropped; drop it now, while the request is live.
    out_ = nullptr;
  });
}

void connect_stream::keep_alive(kj::Duration every, std::string message) {
  keepalive_every_ = every;
  keepalive_message_ = std::move(message);
  keepalive_ = ticks().eagerlyEvaluate(nullptr);
}

kj::Promise<void> connect_stream::ticks() {
  return x_.timer.afterDelay(keepalive_every_).then([this]() -> kj::Promise<void> {
    if (finished_ || is_broken_)
      return kj::READY_NOW;
    if (x_.timer.now() - last_write_ >= keepalive_every_ && queue_.empty())
      (void)send(keepalive_message_);
    return ticks();
  });
}

} // namespace sandboxd::e2b
