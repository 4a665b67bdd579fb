// connect_protocol — the Connect protocol (connectrpc.com/docs/protocol) as the E2B SDKs speak
// it to envd, the daemon inside an E2B sandbox: JSON messages (the SDKs' `useBinaryFormat:
// false` codec), no compression.
//
// A unary call is a POST of one message (Content-Type application/json); its answer is the
// response message with 200, or an error object {"code": "not_found", "message": "..."} with
// the HTTP status of its code. A streaming call (application/connect+json) carries envelopes
// both ways:
//   flags (1 byte) | length (4 bytes, big-endian) | message (length bytes)
// Flags: 0x01 compressed (refused: the SDKs never compress), 0x02 end of stream. A server
// stream ends with an end-of-stream envelope whose message is {} or {"error": {...}}; its
// HTTP status is 200 even when it failed, unless it failed before the first envelope.
//
// Pure: bytes in, messages or errors out; the server (e2b_server.cpp) does the I/O.
#pragma once

#include "base/errc.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandboxd::e2b {

// Connect's error codes (gRPC's, spelled in snake_case on the wire).
enum class connect_code {
  canceled,
  unknown,
  invalid_argument,
  deadline_exceeded,
  not_found,
  already_exists,
  permission_denied,
  resource_exhausted,
  failed_precondition,
  aborted,
  out_of_range,
  unimplemented,
  internal,
  unavailable,
  data_loss,
  unauthenticated,
};

std::string_view wire_name(connect_code code);
// The HTTP status a unary error (or a stream that fails before its first message) answers.
int http_status(connect_code code);

struct connect_error {
  connect_code code = connect_code::unknown;
  std::string message;
};

// sandboxd's code as Connect's: not_found, permission_denied, invalid_argument,
// resource_exhausted, unavailable and internal keep their names; conflict is
// failed_precondition (the sandbox is not in a state that allows it: the SDKs pass the
// message on); not_a_directory, is_a_directory and too_large are invalid_argument.
connect_error to_connect(const error& e);

// {"code":"not_found","message":"..."}: a unary error's body.
std::string error_body(const connect_error& e);

// One envelope around `message`.
std::string envelope(std::string_view message);
// The stream's last envelope: {} or {"error": {...}}.
std::string end_of_stream(const std::optional<connect_error>& failure);

// Reads envelopes from bytes as they arrive, keeping at most one message and one header.
// A message longer than `max_message`, a compressed one, or bytes after the end of stream
// are a protocol error (invalid_argument, or resource_exhausted for the length), after
// which nothing more is read.
class envelope_reader {
public:
  explicit envelope_reader(std::size_t max_message) : max_message_(max_message) {}

  struct message {
    bool end_of_stream = false;
    std::string bytes;
  };

  // Adds bytes; the messages they complete are appended to `out`. False on a protocol
  // error (failure() says which); the reader then takes nothing more.
  bool feed(std::string_view bytes, std::vector<message>& out);
  // The stream ended: true when it ended between envelopes (a partial one is an error).
  bool finish();
  const std::optional<connect_error>& failure() const { return failure_; }

private:
  bool fail(connect_code code, std::string message);

  std::size_t max_message_;
  std::string header_;
  std::string body_;
  std::size_t body_length_ = 0;
  bool in_body_ = false;
  bool ended_ = false;
  std::uint8_t flags_ = 0;
  std::optional<connect_error> failure_;
};

// The Connect-Timeout-Ms header's value in milliseconds (at most 10 digits, as the
// protocol says), or nothing when it is absent or malformed.
std::optional<std::int64_t> parse_timeout_ms(std::string_view header);

} // namespace sandboxd::e2b
