#include "runtime/agent_session.hpp"

#include <cstring>

namespace sandboxd::runtime {
namespace {

std::string kind_name(std::uint8_t k) {
  switch (k) {
  case SBA_HELLO:
    return "hello";
  case SBA_PONG:
    return "pong";
  case SBA_STARTED:
    return "started";
  case SBA_OUT:
    return "stdout";
  case SBA_ERR:
    return "stderr";
  case SBA_EXITED:
    return "exited";
  case SBA_FAILED:
    return "failed";
  case SBA_SIGNALLED:
    return "signalled";
  case SBA_STDIN_CREDIT:
    return "stdin credit";
  }
  return "kind " + std::to_string(k);
}

// The agent's text, as the host quotes it: printable ASCII only, at most 200 bytes.
std::string quoted(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200))
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return out;
}

} // namespace

agent_session::agent_session(limits l, clock::time_point now)
    : limits_(l), hello_due_(now + l.answer), last_heard_(now) {}

std::optional<std::string> agent_session::take(agent_frame&& f, clock::time_point now,
                                               events& out) {
  last_heard_ = now;
  if (!hello_) {
    if (f.kind != SBA_HELLO || f.stream != 0)
      return "its first frame was " + kind_name(f.kind) + ", not hello";
    if (f.body.size() != 20 || std::memcmp(f.body.data(), SBA_MAGIC, 8) != 0)
      return "its hello is not a sandboxd agent's";
    if (get_u32(f.body.data() + 8) != SBA_VERSION)
      return "its hello names protocol version " + std::to_string(get_u32(f.body.data() + 8)) +
             ", not " + std::to_string(SBA_VERSION);
    hello_ = true;
    pid_ = get_u32(f.body.data() + 12);
    return std::nullopt;
  }
  if (f.stream == 0) {
    if (f.kind == SBA_PONG) {
      if (!pong_due_ || f.body.size() != 8 || get_u64(f.body.data()) != ping_nonce_)
        return "it sent a pong that answers no ping";
      pong_due_.reset();
      return std::nullopt;
    }
    return "it sent " + kind_name(f.kind) + " on stream 0";
  }
  auto it = streams_.find(f.stream);
  if (it == streams_.end())
    return "it sent " + kind_name(f.kind) + " for stream " + std::to_string(f.stream) +
           ", which the host did not open or which has ended";
  auto why = take_stream(f, it->second, out);
  if (!why && it->second.ended && it->second.signals_due.empty())
    streams_.erase(it);
  return why;
}

std::optional<std::string> agent_session::take_stream(agent_frame& f, stream_state& s,
                                                      events& out) {
  const std::string where = " on stream " + std::to_string(f.stream);
  auto need = [&](std::size_t n) -> std::optional<std::string> {
    if (f.body.size() != n)
      return "its " + kind_name(f.kind) + where + " has " + std::to_string(f.body.size()) +
             " bytes, not " + std::to_string(n);
    return std::nullopt;
  };
  stream_event e;
  if (f.kind == SBA_SIGNALLED) {
    if (auto w = need(4))
      return w;
    if (s.signals_due.empty())
      return "it sent signalled" + where + ", which had no signal asked for";
    s.signals_due.pop_front();
    e.what = stream_event::type::signalled;
    e.value = get_u32(f.body.data());
    out.emplace_back(f.stream, std::move(e));
    return std::nullopt;
  }
  if (s.ended)
    return "it sent " + kind_name(f.kind) + where + " after the stream ended";
  switch (f.kind) {
  case SBA_STARTED:
    if (auto w = need(4))
      return w;
    if (s.started)
      return "it sent started" + where + " twice";
    s.started = true;
    s.start_due.reset();
    e.what = stream_event::type::started;
    e.value = get_u32(f.body.data());
    break;
  case SBA_OUT:
  case SBA_ERR:
    if (!s.started)
      return "it sent output" + where + " before the program started";
    if (f.body.empty())
      return "it sent an empty output frame" + where;
    if (f.body.size() > s.credit)
      return "it sent " + std::to_string(f.body.size()) + " bytes of output" + where +
             " with a credit of " + std::to_string(s.credit);
    s.credit -= f.body.size();
    if (s.max_output > 0) {
      std::uint64_t& sent = f.kind == SBA_OUT ? s.out_bytes : s.err_bytes;
      sent += f.body.size();
      if (sent > s.max_output)
        return "it sent " + std::to_string(sent) + " bytes of " +
               (f.kind == SBA_OUT ? "stdout" : "stderr") + where +
               ", more than the exec's output cap of " + std::to_string(s.max_output);
    }
    e.what = f.kind == SBA_OUT ? stream_event::type::out : stream_event::type::err;
    e.data = std::move(f.body);
    break;
  case SBA_EXITED:
    if (auto w = need(8))
      return w;
    if (get_u32(f.body.data() + 4) & ~(SBA_EXIT_TIMED_OUT | SBA_EXIT_TRUNCATED))
      return "its exited" + where + " has unknown flags";
    s.ended = true;
    s.start_due.reset();
    s.end_due.reset();
    e.what = stream_event::type::exited;
    e.status = static_cast<std::int32_t>(get_u32(f.body.data()));
    e.value = get_u32(f.body.data() + 4);
    break;
  case SBA_FAILED:
    if (f.body.size() < 4 || f.body.size() > 4 + 255)
      return "its failed" + where + " has " + std::to_string(f.body.size()) + " bytes";
    if (s.started)
      return "it sent failed" + where + " after the program started";
    s.ended = true;
    s.start_due.reset();
    s.end_due.reset();
    e.what = stream_event::type::failed;
    e.status = static_cast<std::int32_t>(get_u32(f.body.data()));
    e.data = quoted(std::string_view(f.body).substr(4));
    break;
  case SBA_STDIN_CREDIT: {
    if (auto w = need(4))
      return w;
    const std::uint32_t n = get_u32(f.body.data());
    if (!s.has_stdin || n == 0 || n > s.stdin_outstanding)
      return "it granted " + std::to_string(n) + " bytes of stdin credit" + where + " with " +
             std::to_string(s.stdin_outstanding) + " outstanding";
    s.stdin_outstanding -= n;
    s.stdin_room += n;
    e.what = stream_event::type::stdin_credit;
    e.value = n;
    break;
  }
  default:
    return "it sent " + kind_name(f.kind) + where + ", which no agent sends";
  }
  out.emplace_back(f.stream, std::move(e));
  return std::nullopt;
}

void agent_session::welcome(std::string& wire) {
  std::string b;
  put_u32(b, SBA_VERSION);
  put_frame(wire, SBA_WELCOME, 0, b);
}

std::optional<std::uint32_t> agent_session::open(const agent_spawn& sp,
                                                 std::chrono::milliseconds exec_timeout,
                                                 std::chrono::milliseconds backstop,
                                                 clock::time_point now, std::string& wire) {
  if (streams_.size() >= limits_.max_streams)
    return std::nullopt;
  const std::uint32_t id = next_stream_++;
  stream_state s;
  s.credit = sp.window;
  s.max_output = sp.max_output;
  s.has_stdin = sp.stdin_pipe;
  s.stdin_room = sp.stdin_pipe ? SBA_STDIN_WINDOW : 0;
  s.start_due = now + limits_.answer;
  if (exec_timeout.count() > 0)
    s.end_due = now + exec_timeout + backstop + limits_.answer;
  streams_.emplace(id, s);
  if (streams_.size() == 1)
    last_heard_ = now; // silence is counted from the first stream
  put_frame(wire, SBA_SPAWN, id, spawn_body(sp));
  return id;
}

void agent_session::grant(std::uint32_t stream, std::uint32_t bytes, std::string& wire) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.ended || bytes == 0)
    return;
  it->second.credit += bytes;
  std::string b;
  put_u32(b, bytes);
  put_frame(wire, SBA_CREDIT, stream, b);
}

std::uint64_t agent_session::stdin_room(std::uint32_t stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() || it->second.ended ? 0 : it->second.stdin_room;
}

void agent_session::send_stdin(std::uint32_t stream, std::string_view data, std::string& wire) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.ended || data.size() > it->second.stdin_room ||
      data.empty())
    return;
  it->second.stdin_room -= data.size();
  it->second.stdin_outstanding += data.size();
  put_frame(wire, SBA_STDIN, stream, data);
}

void agent_session::end_stdin(std::uint32_t stream, std::string& wire) {
  auto it = streams_.find(stream);
  if (it != streams_.end() && !it->second.ended && it->second.has_stdin)
    put_frame(wire, SBA_STDIN_END, stream, {});
}

void agent_session::resize(std::uint32_t stream, std::uint16_t cols, std::uint16_t rows,
                           std::string& wire) {
  if (is_open(stream))
    put_frame(wire, SBA_RESIZE, stream, window_body(cols, rows));
}

void agent_session::signal(std::uint32_t stream, int signal, clock::time_point now,
                           std::string& wire) {
  auto it = streams_.find(stream);
  if (it == streams_.end())
    return;
  it->second.signals_due.push_back(now + limits_.answer);
  std::string b;
  put_u32(b, static_cast<std::uint32_t>(signal));
  put_frame(wire, SBA_SIGNAL, stream, b);
}

bool agent_session::is_open(std::uint32_t stream) const {
  auto it = streams_.find(stream);
  return it != streams_.end() && !it->second.ended;
}

std::optional<std::string>
agent_session::overdue(clock::time_point now,
                       std::optional<clock::time_point> partial_since) const {
  if (frozen_since_)
    return std::nullopt;
  const std::string within =
    " within " + std::to_string(limits_.answer.count() / 1000.0).substr(0, 4) + " s";
  if (!hello_ && now >= hello_due_)
    return "it sent no hello" + within + " of connecting";
  if (partial_since && now >= *partial_since + limits_.answer)
    return "it did not finish a frame" + within;
  if (pong_due_ && now >= *pong_due_)
    return "it did not answer a ping" + within;
  for (const auto& [id, s] : streams_) {
    const std::string where = " on stream " + std::to_string(id);
    if (s.start_due && now >= *s.start_due)
      return "it did not answer a spawn" + where + within;
    if (!s.signals_due.empty() && now >= s.signals_due.front())
      return "it did not answer a signal request" + where + within;
    if (s.end_due && now >= *s.end_due)
      return "it did not end the exec" + where + " after its timeout";
  }
  return std::nullopt;
}

void agent_session::ping_if_quiet(clock::time_point now, std::string& wire) {
  if (frozen_since_ || !hello_ || pong_due_ || streams_.empty() ||
      now < last_heard_ + limits_.quiet)
    return;
  ++ping_nonce_;
  pong_due_ = now + limits_.answer;
  std::string b;
  put_u64(b, ping_nonce_);
  put_frame(wire, SBA_PING, 0, b);
}

void agent_session::freeze(clock::time_point now) {
  if (!frozen_since_)
    frozen_since_ = now;
}

void agent_session::thaw(clock::time_point now) {
  if (!frozen_since_)
    return;
  const auto d = now - *frozen_since_;
  frozen_since_.reset();
  hello_due_ += d;
  last_heard_ = now;
  if (pong_due_)
    *pong_due_ += d;
  for (auto& [id, s] : streams_) {
    if (s.start_due)
      *s.start_due += d;
    if (s.end_due)
      *s.end_due += d;
    for (auto& t : s.signals_due)
      t += d;
  }
}

} // namespace sandboxd::runtime
