// context — what a running sandboxctl command works with: the global flags, a client
// connected on first use, stdout and stderr, and the one way errors leave the program.
//
// Errors: fail() prints one line on stderr, "sandboxctl: <code>: <message>" (with --json
// also {"error": {"code", "message", "exit_code"}} on stdout, so stdout stays one JSON
// document) and returns the exit code of docs/errors.md (200 + the code; 200 for usage).
// The messages of fail(), usage() and note() name tenants' strings (labels, paths, names):
// on stderr they are shown as terminal_text (cli/terminal_text.hpp), in JSON as they are.
// stdout and stderr are written with write(2), unbuffered: exec output and file content
// leave in the order they came.
#pragma once

#include "api/client.hpp"
#include "cli/connection.hpp"
#include "cli/json_util.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sandboxd::cli {

struct global_options {
  connection_flags connection;
  bool json = false;
};

class context {
public:
  context(global_options globals, environment env);
  ~context();

  bool as_json() const { return globals_.json; }
  const global_options& globals() const { return globals_; }
  const environment& env() const { return env_; }
  events::time_point now() const;

  // The client, connected and authenticated on the first call.
  result<api::client*> client();

  void out(std::string_view bytes) const;
  void err(std::string_view bytes) const;
  // One JSON document (one line) on stdout.
  void print(const json& doc) const;
  // A note for people on stderr: "sandboxctl: <text>".
  void note(const std::string& text) const;

  int fail(const error& e) const;
  int usage(const std::string& message) const;

private:
  global_options globals_;
  environment env_;
  std::optional<api::client> client_;
};

} // namespace sandboxd::cli
