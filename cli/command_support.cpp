#include "cli/command_support.hpp"

#include "cli/duration_arg.hpp"
#include "cli/value_args.hpp"

#include <cerrno>
#include <unistd.h>

namespace sandboxd::cli {

parsed<std::optional<std::chrono::nanoseconds>> duration_flag(context& cx, const std::string& flag,
                                                              const std::string& text) {
  parsed<std::optional<std::chrono::nanoseconds>> p;
  if (text.empty()) {
    p.value.emplace();
    return p;
  }
  auto d = parse_duration(text);
  if (!d) {
    p.exit = cx.usage(flag + ": " + d.err().message);
    return p;
  }
  p.value.emplace(*d);
  return p;
}

parsed<std::vector<events::label>> label_flags(context& cx, const std::vector<std::string>& texts) {
  parsed<std::vector<events::label>> p;
  std::vector<events::label> labels;
  for (const auto& t : texts) {
    auto kv = parse_pair(t, "--label");
    if (!kv) {
      p.exit = cx.usage(kv.err().message);
      return p;
    }
    labels.push_back({kv->first, kv->second});
  }
  p.value = std::move(labels);
  return p;
}

int env_flags(context& cx, const std::string& flag, const std::vector<std::string>& texts,
              bool secret, std::vector<events::env_var>& out) {
  for (const auto& t : texts) {
    auto kv = parse_pair(t, flag);
    if (!kv)
      return cx.usage(kv.err().message);
    events::env_var v;
    v.name = kv->first;
    v.value = kv->second;
    v.secret = secret;
    out.push_back(std::move(v));
  }
  return 0;
}

bool read_all_fd(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0)
      return true;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
}

} // namespace sandboxd::cli
