#include "api/input_limits.hpp"

namespace sandboxd::api {
namespace {

std::string bytes_text(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " byte" : " bytes");
}

error too_large(std::string_view field, std::size_t got, std::size_t limit) {
  return make_error(errc::invalid_argument, std::string(field) + " is " + bytes_text(got) +
                                              ", over its limit of " + bytes_text(limit) +
                                              "; send less (docs/api.md \"Limits\")");
}

error too_many(std::string_view what, std::size_t got, std::size_t limit) {
  return make_error(errc::invalid_argument, std::to_string(got) + " " + std::string(what) +
                                              " given, over the limit of " + std::to_string(limit) +
                                              "; send fewer (docs/api.md \"Limits\")");
}

} // namespace

result<void> check_count(std::string_view what, std::size_t count, std::size_t limit) {
  if (count > limit)
    return too_many(what, count, limit);
  return {};
}

result<void> check_size(std::string_view field, std::size_t bytes, std::size_t limit) {
  if (bytes > limit)
    return too_large(field, bytes, limit);
  return {};
}

result<void> check_labels(const std::vector<events::label>& labels, const input_limits& l) {
  if (auto ok = check_count("labels", labels.size(), l.labels); !ok)
    return ok;
  std::size_t total = 0;
  for (const auto& x : labels) {
    if (x.key.size() > l.label_key_bytes)
      return too_large("a label key", x.key.size(), l.label_key_bytes);
    if (x.value.size() > l.label_value_bytes)
      return too_large("the value of label " + x.key, x.value.size(), l.label_value_bytes);
    total += x.key.size() + x.value.size();
  }
  return check_size("labels (keys and values together)", total, l.labels_bytes);
}

result<void> check_env(const std::vector<events::env_var>& env, const input_limits& l) {
  if (auto ok = check_count("environment variables", env.size(), l.env_vars); !ok)
    return ok;
  std::size_t total = 0;
  for (const auto& v : env) {
    if (v.name.size() > l.env_name_bytes)
      return too_large("an environment variable name", v.name.size(), l.env_name_bytes);
    if (v.value.size() > l.env_value_bytes)
      return too_large("the value of environment variable " + v.name, v.value.size(),
                       l.env_value_bytes);
    total += v.name.size() + v.value.size();
  }
  return check_size("the environment (names and values together)", total, l.env_bytes);
}

result<void> check_argv(const std::vector<std::string>& argv, const input_limits& l) {
  if (auto ok = check_count("arguments", argv.size(), l.argv); !ok)
    return ok;
  std::size_t total = 0;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].size() > l.arg_bytes)
      return too_large("argument " + std::to_string(i), argv[i].size(), l.arg_bytes);
    total += argv[i].size();
  }
  return check_size("the arguments together", total, l.argv_bytes);
}

} // namespace sandboxd::api
