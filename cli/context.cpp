#include "cli/context.hpp"

#include "cli/exit_codes.hpp"
#include "cli/terminal_text.hpp"

#include <cerrno>
#include <unistd.h>

namespace sandboxd::cli {
namespace {

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return; // a closed pipe: SIGPIPE has its default action, so this is stderr only
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

} // namespace

context::context(global_options globals, environment env)
    : globals_(std::move(globals)), env_(std::move(env)) {}

context::~context() = default;

events::time_point context::now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

result<api::client*> context::client() {
  if (client_)
    return &*client_;
  auto options = resolve_connection(globals_.connection, env_);
  if (!options)
    return options.err();
  auto c = api::client::connect(*options);
  if (!c) {
    if (c.code() == errc::unavailable)
      return make_error(errc::unavailable,
                        "cannot reach sandboxd at " + options->address + " (" + c.err().message +
                          "); start it (scripts/start) or point --addr or SANDBOXD_ADDR at it");
    return c.err();
  }
  client_.emplace(std::move(*c));
  return &*client_;
}

void context::out(std::string_view bytes) const {
  write_all(1, bytes);
}

void context::err(std::string_view bytes) const {
  write_all(2, bytes);
}

void context::print(const json& doc) const {
  out(dump_line(doc));
}

void context::note(const std::string& text) const {
  err("sandboxctl: " + terminal_text(text) + "\n");
}

int context::fail(const error& e) const {
  const int code = exit_code_of(e.code);
  if (as_json())
    print(
      json{{"error", {{"code", to_string(e.code)}, {"message", e.message}, {"exit_code", code}}}});
  err("sandboxctl: " + to_string(e.code) + ": " + terminal_text(e.message) + "\n");
  return code;
}

int context::usage(const std::string& message) const {
  if (as_json())
    print(json{{"error", {{"code", "usage"}, {"message", message}, {"exit_code", k_exit_usage}}}});
  err("sandboxctl: usage: " + terminal_text(message) + "\n");
  return k_exit_usage;
}

} // namespace sandboxd::cli
