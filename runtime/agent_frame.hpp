// agent_frame — the frames of the agent protocol on the host side (docs/agent-protocol.md;
// the numbers are runtime/exec_guard/agent_wire.h, shared with the agent): encoding what the
// host sends, and a reader that cuts what the agent sends into frames without trusting it.
//
// The reader never holds more than one frame's body plus a fixed read buffer: a length over
// SBA_MAX_BODY, or a header with flags or reserved bits set, is refused before any body is
// read, whatever the peer sends next. Pure: no I/O, no clock.
#pragma once

#include "runtime/exec_guard/agent_wire.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::runtime {

struct agent_frame {
  std::uint8_t kind = 0;
  std::uint32_t stream = 0;
  std::string body;
};

// Appends one frame to `out`.
void put_frame(std::string& out, std::uint8_t kind, std::uint32_t stream, std::string_view body);
// Little-endian integers, as every body holds them.
void put_u32(std::string& out, std::uint32_t v);
void put_u64(std::string& out, std::uint64_t v);
std::uint32_t get_u32(const char* p);
std::uint64_t get_u64(const char* p);

// What the host asks the agent to run on a new stream (SBA_SPAWN).
struct agent_spawn {
  std::vector<std::string> argv;
  std::vector<std::string> env; // NAME=value, the whole environment
  std::string cwd = "/";
  std::uint64_t timeout_ms = 0;
  bool stdin_pipe = false;
  std::uint64_t max_output = 0;
  std::uint32_t window = 1u << 20; // the stream's first output credit
  std::uint8_t builtin = 0;        // SBA_BUILTIN_*, 0: run argv
  // SBA_USER: uid, gid and supplementary gids (at most SBA_MAX_GROUPS); none: root.
  std::optional<std::vector<std::uint32_t>> user;
  // SBA_PTY: a terminal of cols x rows for stdin, stdout and stderr (output all on OUT).
  std::optional<std::pair<std::uint16_t, std::uint16_t>> pty;
};
// The body of an SBA_RESIZE (and of SBA_PTY): cols u16 | rows u16.
std::string window_body(std::uint16_t cols, std::uint16_t rows);
std::string spawn_body(const agent_spawn& s);

class frame_reader {
public:
  explicit frame_reader(std::size_t read_buffer = 256u << 10);

  // Where the next read from the peer goes; never empty.
  std::span<char> space();
  // `n` bytes were read into space(). Each complete frame goes to `take`, in order. Returns
  // why the bytes are not a valid frame stream, or nullopt.
  std::optional<std::string> commit(std::size_t n, const std::function<void(agent_frame&&)>& take);
  // Bytes of an incomplete frame are held (a peer that stops mid-frame is stalled).
  bool mid_frame() const { return have_ > 0 || body_.has_value(); }

private:
  std::vector<char> buf_;
  std::size_t have_ = 0; // bytes of buf_ not yet cut into frames
  // A body longer than what buf_ held: read straight into it.
  std::optional<agent_frame> body_;
  std::size_t body_have_ = 0;
};

} // namespace sandboxd::runtime
