// process_messages — the messages of envd's process service (process/process.proto of the
// E2B SDKs, package `process`) in their JSON form: the requests the SDKs send, read into
// plain structs, and the responses and stream events written from them.
//
//   Start(StartRequest) -> stream StartResponse{event}      Connect(ConnectRequest) -> stream
//   List() -> ListResponse{processes}                        SendInput, SendSignal, CloseStdin
//   StreamInput(stream StreamInputRequest)                   Update (a PTY's size): refused
//
// A ProcessEvent is one of start{pid}, data{stdout|stderr|pty: bytes}, end{exitCode, exited,
// status, error} and keepalive{}. A process is named by a ProcessSelector: its pid, or the tag
// given at start (sandboxd keeps no tags: a tag selector is answered not_found).
#pragma once

#include "base/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandboxd::e2b {

struct process_selector {
  std::optional<std::uint32_t> pid;
  std::optional<std::string> tag;
};

struct process_config {
  std::string cmd;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> envs; // in the order sent
  std::optional<std::string> cwd;
};

struct start_request {
  process_config process;
  bool pty = false; // a pty was asked for (sandboxd runs no PTY: refused)
  std::optional<std::string> tag;
  bool stdin = false; // the process's stdin stays open for SendInput
};

struct input_request {
  process_selector process;
  std::string data;
  bool pty = false; // the bytes were for a PTY
};

struct signal_request {
  process_selector process;
  int signal = 9; // 9 (SIGKILL) or 15 (SIGTERM)
};

// One message of a StreamInput call.
struct stream_input_event {
  enum class kind { start, data, keepalive } type = kind::keepalive;
  process_selector process; // start
  std::string data;         // data
  bool pty = false;         // data
};

result<start_request> parse_start_request(std::string_view body);
result<input_request> parse_send_input(std::string_view body);
result<signal_request> parse_send_signal(std::string_view body);
// CloseStdinRequest and ConnectRequest: a process selector alone.
result<process_selector> parse_process_request(std::string_view body);
result<stream_input_event> parse_stream_input(std::string_view body);

struct process_view {
  process_config config;
  std::uint32_t pid = 0;
  std::optional<std::string> tag;
};

struct process_end {
  int exit_code = 0;  // -1 when ended by a signal
  bool exited = true; // false when ended by a signal
  std::string status; // "exit status 3", "signal: killed"
  std::optional<std::string> error;
};

// StartResponse / ConnectResponse messages (the same shape: {"event": ProcessEvent}).
std::string start_event(std::uint32_t pid);
std::string data_event(bool is_stderr, std::string_view bytes);
std::string end_event(const process_end& end);
std::string keepalive_event();
std::string list_response(const std::vector<process_view>& processes);

// The end of a process as Go's os.ProcessState reports it (what envd says): an exit code, or
// the signal that ended it ("signal: killed", "signal: terminated", "signal: 6").
process_end end_of(int exit_code, int signal);

} // namespace sandboxd::e2b
