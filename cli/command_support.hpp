// command_support — what the command files share: running a call with the connected client
// and turning its error into sandboxctl's exit (context::fail), and reading the values of
// flags (durations, pairs) into what the client takes, with usage errors that name the flag.
#pragma once

#include "api/client.hpp"
#include "cli/context.hpp"
#include "cli/exit_codes.hpp"

#include <optional>
#include <string>
#include <vector>

namespace sandboxd::cli {

// Runs `body` with the client; a connection failure is the command's failure.
template <class F>
int with_client(context& cx, F&& body) {
  auto c = cx.client();
  if (!c)
    return cx.fail(c.err());
  return body(**c);
}

// A check's report (`check` answered by the client: differences between two sources of
// truth): printed as JSON or text, exit 0 when nothing differs, else k_exit_check_failed.
template <class Check, class ToJson, class ToText>
int report_check(context& cx, const result<Check>& check, ToJson to_json, ToText to_text) {
  if (!check)
    return cx.fail(check.err());
  if (cx.as_json())
    cx.print(to_json(*check));
  else
    cx.out(to_text(*check));
  return check->differences.empty() ? k_exit_ok : k_exit_check_failed;
}

// A parsed flag value, or the usage error already reported (its exit code in `exit`).
template <class T>
struct parsed {
  std::optional<T> value;
  int exit = 0;
  explicit operator bool() const { return value.has_value(); }
};

// A duration flag: empty text is "not given" (nullopt inside a good result).
parsed<std::optional<std::chrono::nanoseconds>> duration_flag(context& cx, const std::string& flag,
                                                              const std::string& text);
// KEY=VALUE flags into labels.
parsed<std::vector<events::label>> label_flags(context& cx, const std::vector<std::string>& texts);
// KEY=VALUE flags into environment variables (secret or not), appended to `out`.
int env_flags(context& cx, const std::string& flag, const std::vector<std::string>& texts,
              bool secret, std::vector<events::env_var>& out);

// Reads a whole file descriptor (stdin) into memory; false on a read error (errno kept).
bool read_all_fd(int fd, std::string& out);

} // namespace sandboxd::cli
