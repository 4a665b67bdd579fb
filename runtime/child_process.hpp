// child_process — runs one program as a child and waits for it: stdin fed byte for byte
// from a string or a source pulled in chunks (or /dev/null), stdout and stderr read separately
// through pipes, each captured up to a cap (the rest is read and dropped, and the result says so)
// and streamed to a callback, with an optional timeout.
//
// When the timeout expires, `on_timeout` runs once (to kill what the child started,
// e.g. a process tree inside a container), then the child itself is killed if it has
// not ended within a short grace. The call returns when the child has ended; output
// still held open by a background grandchild is read as far as it is available then.
#pragma once

#include "runtime/driver.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sandboxd::runtime {

inline constexpr std::size_t k_kept_when_streamed = 64u << 10;

struct process_options {
  std::vector<std::string> argv; // argv[0] an absolute path
  // Runs the program in a private mount namespace without the cgroup2 mount at
  // /sys/fs/cgroup/unified (what crun needs on a cgroup v1 hybrid host).
  bool hide_cgroup2 = false;
  std::optional<std::string> stdin_data;
  // Or stdin pulled chunk by chunk until it returns false, on a thread of its own (so a
  // blocking source never holds up reading the output); after the child has ended, no
  // further chunk is pulled. Set at most one of the two.
  std::function<bool(std::string& chunk)> stdin_source;
  std::uint64_t max_output_bytes = 1ull << 20;
  // Output as it is read, within max_output_bytes. With it, the result's out and err keep
  // only the first k_kept_when_streamed bytes of each stream.
  std::function<void(output_stream, std::string_view)> on_output;
  std::optional<std::chrono::milliseconds> timeout;
  std::function<void()> on_timeout;
};

struct process_result {
  int exit_code = -1; // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
  bool truncated = false;
};

// Throws std::system_error when the child cannot be started (a fault). Feeding stdin
// sets SIGPIPE to ignored for the process (a child that exits early must not kill us).
process_result run_process(const process_options& options);

// The absolute path of `name` in PATH, or empty.
std::string find_program(const std::string& name);

} // namespace sandboxd::runtime
