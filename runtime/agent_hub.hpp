// agent_hub — the host side of every sandbox agent of one driver: a unix socket per sandbox
// that its agent connects to (<sandbox dir>/agent/agent.sock, bound read-only at
// /dev/.sandboxd in the sandbox), one thread that accepts and reads every connection, and
// the streams execs run on (docs/agent-protocol.md).
//
// Every byte from a connection is hostile. Frames are cut and checked (agent_frame,
// agent_session) before anything uses them; memory per connection is bounded by one frame,
// the read buffer and the output credit the host grants per stream. A protocol violation, a
// deadline the agent misses, more than `max_connects` connections within 10 s, or a
// connection that closes while execs run on it *fails* the sandbox's link: its connections
// close, every stream in flight ends with the reason, later opens answer it at once, and
// `on_failure(id, reason)` is called (on the hub's thread; it must not block). The thread
// reads at most 1 MiB from one connection before it turns to the next, so one agent that
// floods never holds up the others.
//
// Connections: the newest that says a valid hello is the agent; the one before is told it
// was replaced (it does not connect again) and its execs in flight end. A sandbox whose
// socket nobody connects to within `connect_wait` of an exec fails.
//
// Thread-safe. The hub outlives every stream it made.
#pragma once

#include "runtime/agent_session.hpp"
#include "runtime/errc.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>

namespace sandboxd::runtime {

struct agent_hub_options {
  agent_session::limits limits;
  std::chrono::milliseconds connect_wait{10000};
  std::chrono::milliseconds backstop{5000}; // the agent's own, after an exec's timeout
  std::size_t max_connects = 8;             // per sandbox within 10 s
  std::uint32_t window = 1u << 20;          // output credit per stream
  std::function<void(const std::string& id, const std::string& reason)> on_failure;
};

class agent_hub;
struct agent_link;
struct stream_box;

// How a stream ended other than by its agent's answer.
enum class stream_end {
  none,
  dropped,   // the driver ended the sandbox's processes (pause, remove): `reason` says which
  replaced,  // another connection became the agent
  violation, // the link failed: `reason` says why
};

// One exec on an agent, for the thread that runs it. Move-only; dropping it before the exec
// ended kills the exec's tree.
class agent_stream {
public:
  agent_stream(agent_stream&&) noexcept;
  agent_stream& operator=(agent_stream&&) = delete;
  ~agent_stream();

  struct next_result {
    std::optional<stream_event> event; // or, when empty, the stream ended:
    stream_end end = stream_end::none;
    std::string reason;
  };
  // The next event, waiting as long as it takes (the hub's deadlines end a stalled agent).
  // After `exited` or `failed` nothing more comes.
  next_result next();
  // Output credit back for `bytes` the caller has taken.
  void grant(std::uint32_t bytes);
  // Sends `data` as stdin, waiting for credit; false once the stream ended.
  bool write_stdin(std::string_view data);
  void end_stdin();
  // A terminal stream's new window size; nothing once the stream ended.
  void resize(std::uint16_t cols, std::uint16_t rows);
  // `signal` to every process below the exec's guard: how many it reached, waiting (at most
  // `start_wait`) for the program to have started first; 0 when the exec has ended.
  outcome<std::uint32_t> signal(int signal, std::chrono::milliseconds start_wait);

private:
  friend class agent_hub;
  agent_stream(std::shared_ptr<agent_link> link, std::shared_ptr<stream_box> box, std::uint32_t id);
  std::shared_ptr<agent_link> link_;
  std::shared_ptr<stream_box> box_;
  std::uint32_t id_ = 0;
};

class agent_hub {
public:
  explicit agent_hub(agent_hub_options options);
  ~agent_hub();
  agent_hub(const agent_hub&) = delete;
  agent_hub& operator=(const agent_hub&) = delete;

  // Listens for sandbox `id`'s agent at `dir_fd`/agent.sock (a directory of the host's: a
  // stale socket there is replaced), owned by root, group `gid`, mode 0660 — unless it
  // listens already. A link that failed is made afresh (its sandbox's container is new).
  // Throws std::system_error on faults.
  void listen(const std::string& id, int dir_fd, gid_t gid, bool fresh);
  bool listening(const std::string& id);
  // Forgets sandbox `id`: its socket and connections close, streams in flight end with
  // stream_end::dropped and `why`.
  void drop(const std::string& id, const std::string& why);
  // While the sandbox is frozen nothing of its agent is overdue (agent_session::freeze).
  void freeze(const std::string& id);
  void thaw(const std::string& id);
  // Why sandbox `id`'s link failed, or nullopt.
  std::optional<std::string> failure(const std::string& id);

  // A new stream running `spawn` on sandbox `id`'s agent, once one is connected (waiting up
  // to connect_wait). `exec_timeout`: the exec's timeout (0: none). Errors: unavailable when
  // the hub does not listen for `id`; internal when the link failed (naming why);
  // resource_exhausted past agent_session::limits::max_streams.
  outcome<agent_stream> open(const std::string& id, agent_spawn spawn,
                             std::chrono::milliseconds exec_timeout);

  const agent_hub_options& options() const { return options_; }

private:
  friend class agent_stream;
  friend struct agent_link;
  struct impl;
  agent_hub_options options_;
  std::unique_ptr<impl> impl_;
};

} // namespace sandboxd::runtime
