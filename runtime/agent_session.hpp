// agent_session — the host's view of one connection to a sandbox's agent: which streams the
// host opened, what the agent may send on each next, how much output it may still send (its
// credit) and what the host waits for by when. Every frame from the agent is checked against
// that before anything else looks at it; a frame that does not fit is a protocol violation,
// named in the answer (docs/agent-protocol.md, "What the host refuses").
//
// So a hostile agent can make the host hold at most, per stream, the output credit the host
// granted (the rest is a violation; so is output past the exec's cap), and per connection at most
// `max_streams` streams, which only the host opens. A peer that says nothing while the host waits
// for it (a hello, an answer to a spawn, a signal or a ping, the rest of a frame, an exec's end
// after its timeout) is overdue after `answer` and named by overdue().
//
// Pure: no I/O and no clock of its own (the caller passes `now`); not thread-safe (the link
// holds its lock around it).
#pragma once

#include "runtime/agent_frame.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandboxd::runtime {

// What a stream receives from its agent, in order.
struct stream_event {
  enum class type { started, out, err, exited, failed, signalled, stdin_credit };
  type what = type::started;
  std::string data;        // out, err: the bytes; failed: the agent's text
  std::int32_t status = 0; // exited: the wait status; failed: the errno
  std::uint32_t value = 0; // exited: SBA_EXIT_* flags; signalled: count; stdin_credit: bytes
};

class agent_session {
public:
  using clock = std::chrono::steady_clock;
  struct limits {
    std::chrono::milliseconds answer{10000}; // the longest the host waits for any answer
    std::chrono::milliseconds quiet{15000};  // silence with streams open before a ping
    std::size_t max_streams = 200;           // streams open at once (the agent's bound too)
  };

  agent_session(limits l, clock::time_point now);

  bool ready() const { return hello_; }
  std::uint32_t agent_pid() const { return pid_; }
  std::size_t open_streams() const { return streams_.size(); }

  using events = std::vector<std::pair<std::uint32_t, stream_event>>;
  // A frame from the agent. Appends what streams receive to `out`; returns why the frame
  // breaks the protocol, or nullopt.
  std::optional<std::string> take(agent_frame&& f, clock::time_point now, events& out);

  // The host's side. Each appends the frames it sends to `wire`.
  // The welcome, once the hello was taken.
  void welcome(std::string& wire);
  // A new stream running `s`; nullopt when max_streams are open. `exec_timeout` (0: none) is
  // the exec's timeout: its end is overdue `backstop` + answer after it.
  std::optional<std::uint32_t> open(const agent_spawn& s, std::chrono::milliseconds exec_timeout,
                                    std::chrono::milliseconds backstop, clock::time_point now,
                                    std::string& wire);
  // Output credit back for bytes the host has taken.
  void grant(std::uint32_t stream, std::uint32_t bytes, std::string& wire);
  // How much stdin the host may send on `stream` now.
  std::uint64_t stdin_room(std::uint32_t stream) const;
  // Sends stdin (at most stdin_room) or its end.
  void send_stdin(std::uint32_t stream, std::string_view data, std::string& wire);
  void end_stdin(std::uint32_t stream, std::string& wire);
  // A terminal stream's new window size (SBA_RESIZE); nothing for a stream that ended.
  void resize(std::uint32_t stream, std::uint16_t cols, std::uint16_t rows, std::string& wire);
  // Asks for `signal` to the stream's tree; its `signalled` is due within `answer`.
  void signal(std::uint32_t stream, int signal, clock::time_point now, std::string& wire);
  // Whether `stream` is open (not ended).
  bool is_open(std::uint32_t stream) const;

  // Why the agent is late now, or nullopt. `partial_since`: when the first byte of a frame
  // still incomplete arrived.
  std::optional<std::string> overdue(clock::time_point now,
                                     std::optional<clock::time_point> partial_since) const;
  // A ping when streams are open and nothing came for `quiet`.
  void ping_if_quiet(clock::time_point now, std::string& wire);
  // A memory pause: nothing is overdue while frozen; thawing moves every deadline on by the
  // time spent frozen.
  void freeze(clock::time_point now);
  void thaw(clock::time_point now);

private:
  struct stream_state {
    bool started = false;
    bool ended = false;
    std::uint64_t credit = 0; // output the agent may still send
    // The exec's cap per output pipe (0: none) and what came on each: the agent drops what
    // is past it, so more is a violation.
    std::uint64_t max_output = 0;
    std::uint64_t out_bytes = 0;
    std::uint64_t err_bytes = 0;
    bool has_stdin = false;
    std::uint64_t stdin_room = 0;        // stdin the host may still send
    std::uint64_t stdin_outstanding = 0; // sent, not credited back
    std::deque<clock::time_point> signals_due;
    std::optional<clock::time_point> start_due; // spawn answered by
    std::optional<clock::time_point> end_due;   // exec's end, after its timeout
  };
  std::optional<std::string> take_stream(agent_frame& f, stream_state& s, events& out);

  limits limits_;
  bool hello_ = false;
  clock::time_point hello_due_;
  std::uint32_t pid_ = 0;
  std::uint32_t next_stream_ = 1;
  std::map<std::uint32_t, stream_state> streams_;
  clock::time_point last_heard_;
  std::uint64_t ping_nonce_ = 0;
  std::optional<clock::time_point> pong_due_;
  std::optional<clock::time_point> frozen_since_;
};

} // namespace sandboxd::runtime
